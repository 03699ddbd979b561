import functools
import math

import pytest
import torch

from attnlab import CharTokenizer, Config, TinyGPT, generate
from attnlab.errors import ConfigError
from attnlab.model import KVCache, SequenceTooLongError, attention


def make(cfg, seed=0):
    torch.manual_seed(seed)
    return TinyGPT(cfg)


def test_parameter_counts_match_the_book():
    assert TinyGPT(Config()).num_params() == 425_984
    assert TinyGPT(Config(d_model=256, n_head=1)).num_params() == 1_376_256


def test_structure_names_the_book_uses():
    m = TinyGPT(Config())
    blk = m.blocks[0]
    assert blk.attn.qkv.bias is None and blk.attn.proj.bias is None
    assert blk.mlp[2].weight.shape == (128, 256)
    names = dict(m.named_parameters())
    assert "blocks.0.mlp.2.weight" in names and "blocks.1.attn.proj.weight" in names
    assert m.head.weight is m.tok_emb.weight
    assert m.cfg is not None and hasattr(blk, "ln1")


def test_init_statistics():
    m = make(Config(), 1)
    assert abs(m.blocks[0].attn.qkv.weight.std().item() - 0.02) < 0.001
    resid = 0.02 / math.sqrt(4)
    assert abs(m.blocks[0].attn.proj.weight.std().item() - resid) < 0.0007
    assert abs(m.blocks[1].mlp[2].weight.std().item() - resid) < 0.0007


def test_logits_for_every_position_and_loss():
    cfg = Config(n_layer=1, n_head=2, d_model=16, block_size=8, vocab_size=20)
    m = make(cfg)
    x = torch.randint(0, 20, (3, 8))
    logits, loss = m(x)
    assert logits.shape == (3, 8, 20) and loss is None
    _, loss = m(x, torch.randint(0, 20, (3, 8)))
    assert loss.ndim == 0 and abs(loss.item() - math.log(20)) < 0.2  # near uniform at init


def test_too_long_sequence_is_an_error():
    cfg = Config(n_layer=1, n_head=2, d_model=16, block_size=8, vocab_size=20)
    with pytest.raises(SequenceTooLongError, match="block_size is 8"):
        make(cfg)(torch.zeros(1, 9, dtype=torch.long))


def test_emb_scale_scales_the_characters_not_the_positions():
    """emb_scale (the original Transformer's sqrt(d_model)): the first block sees
    sqrt(d_model) * token embedding + the sinusoidal table, and the tied head is unchanged."""
    from attnlab.attention.positions import sinusoidal_table

    cfg = Config(n_layer=1, n_head=2, d_model=16, block_size=8, vocab_size=20, pos="sinusoidal", emb_scale=True)
    m, seen = make(cfg), []
    m.blocks[0].register_forward_pre_hook(lambda mod, args: seen.append(args[0]))
    x = torch.randint(0, 20, (2, 8))
    m(x)
    want = m.tok_emb(x) * 4.0 + sinusoidal_table(8, 16)
    assert torch.allclose(seen[0], want, atol=1e-6)
    plain = make(cfg.replace(emb_scale=False))
    assert torch.equal(plain.tok_emb.weight, m.tok_emb.weight) and m.head.weight is m.tok_emb.weight
    assert not torch.allclose(plain(x)[0], m(x)[0])


@pytest.mark.parametrize("attn_scale", ["1/sqrt(d)", "none", "1/d"])
@pytest.mark.parametrize(
    "variant", [{}, {"n_kv_head": 1}, {"pos": "rope"}, {"qk_norm": True}, {"norm": "rmsnorm"}, {"pos": "sinusoidal"}]
)
def test_explicit_path_equals_sdpa_path(attn_scale, variant):
    cfg = Config(n_layer=2, n_head=4, d_model=32, block_size=16, vocab_size=30, attn_scale=attn_scale, **variant)
    m = make(cfg).double()
    x = torch.randint(0, 30, (2, 16))
    fast, loss_f = m(x, x)
    g_fast = torch.autograd.grad(loss_f, list(m.parameters()))
    slow, loss_s = m(x, x, record=True)
    g_slow = torch.autograd.grad(loss_s, list(m.parameters()))
    assert torch.allclose(fast, slow, atol=1e-12, rtol=0)
    for a, b in zip(g_fast, g_slow):
        assert torch.allclose(a, b, atol=1e-12, rtol=0)
    d = m.blocks[1].attn.last_diag
    assert set(d) >= {"weight_entropy", "jacobian_fro", "logit_std", "q_std", "k_std"}
    assert all(math.isfinite(v) for v in d.values())


@pytest.mark.parametrize("attn_scale, factor", [("1/sqrt(d)", 8**-0.5), ("none", 1.0), ("1/d", 1 / 8)])
def test_each_attention_scaling_equals_sdpa_with_that_scale(attn_scale, factor):
    """Config.attn_scale: the model's weights are softmax(q·kᵀ · factor) for the factor the option names
    (d_head 8), checked against PyTorch's SDPA given that factor explicitly, with and without QK-norm."""
    import torch.nn.functional as F

    for qk_norm in (False, True):
        cfg = Config(
            n_layer=1, n_head=2, d_model=16, block_size=8, vocab_size=20, attn_scale=attn_scale, qk_norm=qk_norm
        )
        m = make(cfg).double()
        x = torch.randint(0, 20, (2, 8))
        attn = m.blocks[0].attn
        with m.capture("tap_q", "tap_k", "tap_v") as got:
            m(x)
        q, k, v = (got[f"blocks.0.attn.{t}"][0] for t in ("tap_q", "tap_k", "tap_v"))
        want = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=factor)
        assert attn.scale == pytest.approx(factor)
        y = attention(q, k, v, attn.scale)
        assert torch.allclose(y, want, atol=1e-12, rtol=0)


def test_the_scaling_has_one_spelling():
    """`scaled` is the knob (True, False or "1/d"); `attn_scale` and the scalings' names are input
    aliases, normalised at the door; the stored form keeps the two keys every run was written with."""
    assert Config(attn_scale="none") == Config(scaled=False) == Config(scaled="none")
    assert Config(attn_scale="1/sqrt(d)") == Config() == Config(scaled="1/sqrt(d)")
    assert Config(attn_scale="1/d").scaled == "1/d" and Config(scaled=False).scaled is False
    assert (
        Config(attn_scale="1/d") == Config.from_overrides(["scaled=1/d"]) == Config.from_overrides(["attn_scale=1/d"])
    )
    assert Config(scaled=False).replace(scaled=True) == Config() and Config().replace(attn_scale="none").scaled is False
    stored = Config(scaled="1/d").to_dict()
    assert (stored["scaled"], stored["attn_scale"]) == (True, "1/d") and Config.from_dict(stored).scaled == "1/d"
    assert (Config(scaled=False).to_dict()["scaled"], Config(scaled=False).to_dict()["attn_scale"]) == (False, None)
    assert "attn_scale" not in {f.name for f in __import__("dataclasses").fields(Config)}
    with pytest.raises(ConfigError, match="attn_scale"):
        Config(attn_scale="1/d_k")
    with pytest.raises(ConfigError, match="'scaled' = 'maybe'"):
        Config(scaled="maybe")
    with pytest.raises(ConfigError, match="contradicts scaled=False"):
        Config(scaled=False, attn_scale="1/d")


def test_causality_by_gradients():
    cfg = Config(n_layer=2, n_head=2, d_model=16, block_size=10, vocab_size=20)
    m = make(cfg)
    emb = m.tok_emb(torch.randint(0, 20, (1, 10))).detach().requires_grad_(True)
    # run the blocks directly on embeddings so we can differentiate w.r.t. inputs
    pos, pv = m.positions(0, 10, emb.device)
    h = emb + pv
    with m.capture("tap_pattern"):  # listening selects the explicit path
        for b in m.blocks:
            h = b(h, pos)
    h[0, 4].sum().backward()
    g = emb.grad[0].abs().sum(-1)
    assert (g[5:] == 0).all() and (g[:5] > 0).all()


def test_patterns_rows_sum_to_one_and_future_is_exactly_zero():
    m = make(Config(n_layer=2, n_head=4, d_model=32, block_size=12, vocab_size=30))
    pats = m.attention_patterns(torch.randint(0, 30, (2, 12)))
    assert len(pats) == 2
    for p in pats:
        assert p.shape == (2, 4, 12, 12)
        assert torch.allclose(p.sum(-1), torch.ones(2, 4, 12), atol=1e-6)
        assert (p.triu(1) == 0).all()
    # hooks are gone after the capture
    assert not any(t._forward_hooks for t in m.modules() if t.__class__.__name__ == "Tap")


def test_injected_bugs_show_their_signatures():
    base = Config(n_layer=1, n_head=1, d_model=32, block_size=12, vocab_size=30)
    x = torch.randint(0, 30, (2, 12))
    p = make(base.replace(bug="scale_after_softmax")).attention_patterns(x)[0]
    assert torch.allclose(p.sum(-1), torch.full((2, 1, 12), 1 / math.sqrt(32)), atol=1e-6)
    p = make(base.replace(bug="mask_zero")).attention_patterns(x)[0]
    assert p.triu(1).sum() > 0  # weight leaks into the future
    p_ok = make(base).attention_patterns(x)[0]
    p = make(base.replace(bug="no_max_subtraction")).attention_patterns(x)[0]
    assert torch.allclose(p, p_ok, atol=1e-6)  # invisible at this scale
    # ... but injected: at logits of hundreds exp overflows without the max subtracted
    big_ok, big_bug = make(base), make(base.replace(bug="no_max_subtraction"))
    with torch.no_grad():
        for m in (big_ok, big_bug):
            m.blocks[0].attn.qkv.weight.mul_(200)
    assert torch.isfinite(big_ok.attention_patterns(x)[0]).all()
    assert not torch.isfinite(big_bug.attention_patterns(x)[0]).all()
    p = make(base.replace(bug="divide_by_d_k")).attention_patterns(x)[0]
    m = make(base.replace(bug="divide_by_d_k"))
    m(x, record=True)
    assert m.blocks[0].attn.last_diag["weight_entropy"] > 0.999


def test_pos_none_is_permutation_equivariant():
    cfg = Config(n_layer=1, n_head=2, d_model=16, block_size=8, vocab_size=20, pos="none")
    m = make(cfg)
    x = torch.randn(1, 8, 16)
    perm = torch.randperm(8)
    # without a causal mask attention itself is equivariant; with it, check the
    # whole block on a reversed order produces the reversed output for row-independent parts
    y = m.blocks[0].mlp(x)
    assert torch.allclose(m.blocks[0].mlp(x[:, perm]), y[:, perm], atol=1e-6)
    # the causal model without positions: output at t depends on the multiset of tokens <= t
    ids = torch.tensor([[3, 5, 7, 9]])
    swapped = torch.tensor([[5, 3, 7, 9]])
    l1, _ = m(ids)
    l2, _ = m(swapped)
    assert torch.allclose(l1[0, 2:], l2[0, 2:], atol=1e-5)
    assert not torch.allclose(l1[0, 0], l2[0, 0])


@pytest.mark.parametrize("variant", [{}, {"pos": "none"}, {"bug": "mask_zero"}, {"n_kv_head": 1, "pos": "rope"}])
def test_causal_true_is_the_default_forward_bit_for_bit(variant):
    """causal=True is the chapter's model on both paths (fast; explicit, listened to); and what the
    mask promises: a later token changes no earlier position's logits, not by one bit."""
    cfg = Config(n_layer=2, n_head=2, d_model=16, block_size=10, vocab_size=20, **variant)
    m = make(cfg)
    x = torch.randint(0, 20, (2, 10))
    later = x.clone()
    later[:, 6] = (later[:, 6] + 1) % 20
    for record in (False, True):
        base = m(x, record=record)[0]
        assert torch.equal(m(x, record=record, causal=True)[0], base)
        if variant.get("bug") != "mask_zero":  # the leaking mask is the one bug that lets it through
            assert torch.equal(m(later, record=record, causal=True)[0][:, :6], base[:, :6])


def test_without_the_mask_a_later_token_changes_earlier_outputs():
    cfg = Config(n_layer=2, n_head=2, d_model=16, block_size=10, vocab_size=20)
    m = make(cfg).double()
    x = torch.randint(0, 20, (2, 10))
    later = x.clone()
    later[:, 6] = (later[:, 6] + 1) % 20
    fast = m(x, causal=False)[0]
    slow = m(x, causal=False, record=True)[0]  # the explicit path without the mask is the same function
    assert torch.allclose(fast, slow, atol=1e-12, rtol=0)
    assert not torch.allclose(fast, m(x)[0])
    changed = (m(later, causal=False)[0] - fast).abs().amax(dim=-1)  # (B, T)
    assert (changed[:, :6] > 1e-6).all()  # every earlier position sees the change
    with pytest.raises(ValueError, match="KV cache"):
        m(x[:, :1], kv_cache=[KVCache(), KVCache()], causal=False)


def test_without_the_mask_blocks_without_positions_are_permutation_equivariant():
    """§1.9.1: no positions and no mask, the blocks' output (tap_hidden) only follows a permutation
    of the input; with the mask it does not."""
    cfg = Config(n_layer=2, n_head=2, d_model=16, block_size=10, vocab_size=20, pos="none")
    m = make(cfg).double()
    x, perm = torch.randint(0, 20, (2, 10)), torch.randperm(10)
    for causal, equivariant in ((False, True), (True, False)):
        with torch.no_grad(), m.capture("tap_hidden") as st:
            logits = m(x, causal=causal)[0]
            m(x[:, perm], causal=causal)
        h, hp = st["tap_hidden"]
        assert torch.allclose(hp, h[:, perm], atol=1e-12) is equivariant
        assert torch.equal(m.head(m.ln_f(h)), logits)  # the tap is the blocks' output the head reads


def test_sinusoidal_and_rope_reach_past_block_size():
    for pos in ("sinusoidal", "rope"):
        m = make(Config(n_layer=1, n_head=2, d_model=16, block_size=8, vocab_size=20, pos=pos))
        logits, _ = m(torch.randint(0, 20, (1, 12)))
        assert logits.shape == (1, 12, 20)


@pytest.mark.parametrize("variant", [{}, {"n_kv_head": 2}, {"n_kv_head": 1}, {"pos": "rope"}])
def test_kv_cache_generation_equals_recompute(text, variant):
    tok = CharTokenizer(text, 40)
    cfg = Config(n_layer=2, n_head=4, d_model=32, block_size=24, vocab_size=40, **variant)
    m = make(cfg)
    a = generate(m, tok, "床前", max_new_tokens=30, seed=3, use_cache=True)
    b = generate(m, tok, "床前", max_new_tokens=30, seed=3, use_cache=False)
    assert a == b and a.startswith("床前")


def test_generate_is_deterministic_and_warns_on_unknown(text):
    tok = CharTokenizer(text, 40)
    m = make(Config(n_layer=1, n_head=2, d_model=16, block_size=16, vocab_size=40))
    assert generate(m, tok, "明月", 10, seed=1) == generate(m, tok, "明月", 10, seed=1)
    with pytest.warns(UserWarning):
        out = generate(m, tok, "龍", 3, seed=1)
    assert out.startswith("<unk>")


def test_the_correct_path_never_mentions_a_bug():
    """§1.11's bugs live in attnlab.attention.faults; the model only installs one at construction."""
    import inspect

    import attnlab.model as M
    from attnlab.attention import faults

    for obj in (M.attention, M.causal_bias, M.CausalSelfAttention, M.Block):
        assert "bug" not in inspect.getsource(obj).lower(), obj.__name__
    x = torch.randint(0, 20, (2, 8))
    cfg = Config(n_layer=1, n_head=2, d_model=16, block_size=8, vocab_size=20)
    bad = make(cfg.replace(bug="mask_zero"))
    assert isinstance(bad.blocks[0].attn.attend, functools.partial)  # the fault, installed from outside
    assert "attend" not in vars(make(cfg).blocks[0].attn)  # the correct model keeps its own method
    # the fault module replays the correct model's stages exactly
    m = make(cfg)
    with m.capture("tap_q", "tap_k", "tap_pattern") as got:
        m(x)
    q, k, p = (got[f"blocks.0.attn.{t}"][0] for t in ("tap_q", "tap_k", "tap_pattern"))
    assert torch.allclose(faults.attention_stages(q, k, m.blocks[0].attn.scale)[-1], p, atol=1e-6)
    with pytest.raises(ValueError, match="unknown bug"):
        faults.install_fault(m, "off_by_one")


def test_recording_equals_the_diagnostics_of_the_captured_taps():
    """model.recording() computes each layer's numbers as its weights pass; they are bit for bit
    pattern_summary of the tensors the taps carried in that forward."""
    from attnlab.diagnostics import DIAG_KEYS, pattern_summary
    from attnlab.model import RECORDED_TAPS

    m = make(Config(n_layer=2, n_head=2, d_model=16, block_size=8, vocab_size=20))
    x = torch.randint(0, 20, (3, 8))
    with m.capture(*RECORDED_TAPS) as got:
        m(x, record=True)
    for i, block in enumerate(m.blocks):
        q, k, s, p = (got[f"blocks.{i}.attn.{t}"][0] for t in RECORDED_TAPS)
        want = [float(v) for v in pattern_summary(s, p, q, k).values()]
        assert [block.attn.last_diag[key] for key in DIAG_KEYS] == want


@pytest.mark.parametrize("n_head", [4, 1])
def test_keys_laid_out_per_head_change_no_bit_of_the_written_out_step(n_head):
    """The written-out path copies k to one block per head before q·kᵀ (so kᵀ is a view the matrix
    multiply reads, not a strided transpose it copies): on this machine the scores, the output and
    every gradient are bit for bit those of k as the projection laid it out (the chapter's model,
    d_head 32, and the case's n_head 1), so recorded runs are the runs recorded before the copy."""
    B, T, nh, hs = 8, 64, n_head, 128 // n_head
    g = torch.Generator().manual_seed(5)
    qkv = torch.randn(B, T, 3 * nh * hs, generator=g, requires_grad=True)
    grads, outs = [], []
    for contiguous in (False, True):
        q, k, v = (t.view(B, T, nh, hs).transpose(1, 2) for t in qkv.split(nh * hs, dim=2))  # (B, nh, T, hs)
        y = attention(q, k.contiguous() if contiguous else k, v, hs**-0.5)
        (g_qkv,) = torch.autograd.grad((y * y).sum(), qkv)
        outs.append(y)
        grads.append(g_qkv)
    assert torch.equal(outs[0], outs[1]) and torch.equal(grads[0], grads[1])
