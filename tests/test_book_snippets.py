"""The chapter's code, run against attnlab with only the import line changed.

Each snippet is quoted from the chapter (section in the name). Where the book
assumes surrounding state ("假设 model 是训练出来的模型", a batch ``x``, a block
``blk``), the test provides it before running the snippet verbatim.
"""

import textwrap

import pytest
import torch

IMPORT = "from attnlab import Config, TinyGPT, CharTokenizer, train, lr_at, get_batch\n"


def run(snippet: str, **env):
    ns = dict(env)
    exec(IMPORT + textwrap.dedent(snippet), ns)
    return ns


def test_1_7_7_qk_scale(capsys):
    from attnlab import Config, TinyGPT

    torch.manual_seed(0)
    model = TinyGPT(Config())
    idx = torch.randint(2, 1200, (4, 64))
    B, T = idx.shape
    x = model.tok_emb(idx) + model.pos_emb(torch.arange(T))
    因果下三角 = torch.ones(T, T, dtype=torch.bool).tril()
    ns = run(
        """
        qkv = blk.attn.qkv(blk.ln1(x))
        q, k, _ = qkv.split(d_model, dim=2)
        qh = q.view(B, T, H, dh).transpose(1, 2)     # 拆成头
        kh = k.view(B, T, H, dh).transpose(1, 2)
        print("q 尺度", qh.std().item(), "k 尺度", kh.std().item())
        dot = qh @ kh.transpose(-2, -1)
        if scaled: dot = dot / dh ** 0.5             # 按实际用的公式算
        print("logits 尺度", dot[..., 因果下三角].std().item())
    """,
        blk=model.blocks[0],
        x=x,
        d_model=128,
        B=B,
        T=T,
        H=4,
        dh=32,
        scaled=True,
        因果下三角=因果下三角,
        torch=torch,
    )
    out = capsys.readouterr().out
    assert "q 尺度" in out and "logits 尺度" in out
    with torch.no_grad(), model.capture("tap_q") as st:
        model(idx)
    assert ns["qh"].std().item() == pytest.approx(st["blocks.0.attn.tap_q"][0].std().item(), rel=1e-5)


def test_1_8_6_head_ablation(capsys):
    """The printed snippet, run as printed, does not remove the heads it names: the heads are 32
    wide and it zeroes 64-column slices, so its 'head' 0 removes real heads 0 and 1, 'head' 1
    removes 2 and 3, and 'heads' 2 and 3 zero an empty slice and change nothing."""
    import re

    from attnlab import Config, TinyGPT
    from attnlab.lab.portrait import book_snippet_ablation, head_removed

    torch.manual_seed(0)
    model = TinyGPT(Config())
    model.requires_grad_(False)  # "a trained model": frozen weights, edited in place below
    with torch.no_grad():
        for blk in model.blocks:  # make every head matter, as in a trained model
            blk.attn.proj.weight.mul_(50)
    before = model.blocks[0].attn.proj.weight.clone()
    ns = run(
        """
        import torch

        # 假设 model 是本章 tiny_gpt 训练出来的模型
        model.eval()
        x = torch.randint(2, 1200, (1, 32))

        # 基准：全部头都在
        with torch.no_grad():
            base_loss = model(x, x)[1].item()
        print(f"全部头：loss {base_loss:.3f}")

        # 逐个把头置零（消融）
        for layer in range(len(model.blocks)):
            for head in range(model.cfg.n_head):
                # 把该头的输出投影对应切片置零
                W = model.blocks[layer].attn.proj.weight
                saved = W[:, head * 64:(head + 1) * 64].clone()
                W[:, head * 64:(head + 1) * 64] = 0
                with torch.no_grad():
                    ablated = model(x, x)[1].item()
                W[:, head * 64:(head + 1) * 64] = saved   # 还原
                print(f"  层{layer} 头{head} 消融后 loss {ablated:.3f}"
                      f"  （变化 {ablated - base_loss:+.3f}）")
    """,
        model=model,
    )
    out = capsys.readouterr().out
    assert out.count("消融后 loss") == 8
    assert torch.equal(model.blocks[0].attn.proj.weight, before)  # restored
    printed = {
        (int(l), int(h)): (float(v), d)
        for l, h, v, d in re.findall(r"层(\d) 头(\d) 消融后 loss ([\d.]+)  （变化 ([+-][\d.]+)）", out)
    }
    x = ns["x"]
    with torch.no_grad():
        base = model(x, x)[1].item()
        for layer in range(2):
            for head, real in ((0, (0, 1)), (1, (2, 3))):
                with head_removed(model, layer, real[0]), head_removed(model, layer, real[1]):
                    both = model(x, x)[1].item()
                assert printed[(layer, head)][0] == pytest.approx(both, abs=6e-4)  # printed to 3 places
                assert abs(both - base) > 1e-3  # and it matters
            for head in (2, 3):  # an empty slice
                assert printed[(layer, head)] == (float(f"{base:.3f}"), "+0.000")
    snip = book_snippet_ablation(model)
    assert [h["real_heads_zeroed"] for h in snip["heads"]] == [[0, 1], [2, 3], [], []] * 2
    assert [h["columns"] for h in snip["heads"][:4]] == [[0, 64], [64, 128], [128, 128], [128, 128]]
    assert all(h["delta_loss"] == 0.0 for h in snip["heads"] if not h["real_heads_zeroed"])
    assert torch.equal(model.blocks[0].attn.proj.weight, before)


def test_1_12_4_dynamics(tmp_path, monkeypatch):
    from functools import partial

    import attnlab
    from attnlab.corpus import load_corpus
    from attnlab.lab.heads import analyze

    monkeypatch.chdir(tmp_path)
    # only the import line differs: a small batch keeps the 2100 steps short
    ns = {
        "Config": partial(attnlab.Config, batch_size=2, eval_batches=1, record_every=0, device="cpu"),
        "train": attnlab.train,
        "analyze": analyze,
        "torch": torch,
        "text": load_corpus(),
    }
    exec(
        textwrap.dedent("""
        # 训练 100 步、500 步、1500 步，各存一次权重
        for steps in (100, 500, 1500):
            cfg = Config(max_steps=steps)
            model, tok, _ = train(text, cfg)
            torch.save(model.state_dict(), f"ckpt_{steps}.pt")

        # 然后分别分析
        results = {}
        for steps in (100, 500, 1500):
            stats = analyze(f"ckpt_{steps}.pt")
            results[steps] = stats
    """),
        ns,
    )
    assert set(ns["results"]) == {100, 500, 1500}
    assert all(ns["results"].values())


def test_1_13_1_three_numbers(capsys):
    from attnlab import Config, TinyGPT

    torch.manual_seed(0)
    model = TinyGPT(Config())
    run(
        """
        # 训练循环里加这几行
        with torch.no_grad():
            model(xb, record=True)
            d = model.blocks[0].attn.last_diag
            print(f"step {step}  熵 {d['weight_entropy']:.4f}  "
                  f"logit_std {d['logit_std']:.2f}  ‖J‖ {d['jacobian_fro']:.5f}")
    """,
        model=model,
        xb=torch.randint(0, 1200, (4, 64)),
        step=0,
        torch=torch,
    )
    line = capsys.readouterr().out
    assert "熵 0.99" in line and "‖J‖" in line


def test_1_18_tokenizer_model_and_loop(text):

    ns = run(
        """
        tok = CharTokenizer(text, vocab_size)
        cfg = Config(n_layer=1, n_head=2, d_model=32, block_size=16, vocab_size=vocab_size,
                     batch_size=4, max_steps=5, warmup=2, device="cpu")
        model = TinyGPT(cfg)
        data = torch.tensor(tok.encode(text))
        tr = data[: int(0.9 * len(data))]
        gen = torch.Generator().manual_seed(cfg.seed)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr,
                                weight_decay=cfg.weight_decay, betas=(0.9, 0.95))

        for step in range(cfg.max_steps):
            for g in opt.param_groups:
                g["lr"] = lr_at(step, cfg)              # ① 学习率调度
            x, y = get_batch(tr, cfg.block_size, cfg.batch_size, gen)
            _, loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)  # ② 梯度裁剪
            opt.step()
    """,
        text=text,
        vocab_size=40,
        torch=torch,
    )
    assert ns["tok"].itos[:2] == ["<pad>", "<unk>"]
    model = ns["model"]
    assert model.head.weight is model.tok_emb.weight  # if cfg.tie_weights: ...
    names = [n for n, _ in model.named_parameters() if n.endswith("proj.weight") or n.endswith("mlp.2.weight")]
    assert names == ["blocks.0.attn.proj.weight", "blocks.0.mlp.2.weight"]
    assert torch.isfinite(ns["loss"])


def test_1_19_1_init_sweep():
    ns = run(
        """
        def init_sweep(text, d_heads):
            out = []
            for d_model in d_heads:
                for scaled in (False, True):
                    cfg = Config(d_model=d_model, n_head=1, n_layer=1, scaled=scaled,
                                 vocab_size=300, block_size=32, device=DEV)
                    torch.manual_seed(0)                 # ① 固定种子
                    m = TinyGPT(cfg).to(DEV).eval()      # ② 不训练，只初始化
                    x = torch.randint(2, 300, (8, 32), device=DEV)
                    with torch.no_grad():
                        m(x, record=True)                # ③ 走一次前向，采集诊断量
                    d = m.blocks[0].attn.last_diag
                    out.append({...})
            return out

        res = init_sweep("", [32, 64])
    """,
        torch=torch,
        DEV="cpu",
    )
    assert len(ns["res"]) == 4  # the book elides the record with {...}
