import pytest

from attnlab import Config
from attnlab.config import preset
from attnlab.errors import ConfigError


def test_defaults_match_the_book():
    c = Config()
    assert (c.n_layer, c.n_head, c.d_model, c.d_ff, c.block_size, c.vocab_size) == (2, 4, 128, 256, 64, 1200)
    assert (c.batch_size, c.lr, c.warmup, c.max_steps, c.grad_clip) == (32, 3e-3, 100, 1500, 1.0)
    assert c.scaled and c.tie_weights and c.seed == 20261014 and c.device == "auto"
    assert c.d_head == 32


def test_frozen():
    with pytest.raises(Exception):
        Config().n_head = 2


def test_d_ff_follows_d_model():
    assert Config(d_model=256, n_head=1).d_ff == 512
    assert Config().replace(d_model=256, n_head=1).d_ff == 512
    assert Config(d_ff=100).replace(d_model=64).d_ff == 100


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"d_model": 130}, "d_model"),
        ({"n_head": 0}, "n_head"),
        ({"vocab_size": 2}, "vocab_size"),
        ({"pos": "alibi"}, "pos"),
        ({"bug": "typo"}, "bug"),
        ({"n_kv_head": 3}, "n_kv_head"),
        ({"lr": -1.0}, "lr"),
        ({"n_layer": "2"}, "n_layer"),
        ({"scaled": 1}, "scaled"),
    ],
)
def test_impossible_config_names_the_field(kw, field):
    with pytest.raises(ValueError, match=f"'{field}'"):
        Config(**kw)


def test_overrides_parse_types_and_reject_unknown():
    c = Config.from_overrides(["scaled=false", "n_head=1", "d_model=256", "lr=1e-3", "bug=none"])
    assert c.scaled is False and c.n_head == 1 and c.d_ff == 512 and c.lr == 1e-3 and c.bug is None
    with pytest.raises(ConfigError, match="unknown config key 'heads'"):
        Config.from_overrides(["heads=2"])
    with pytest.raises(ConfigError, match="'n_head' expects int"):
        Config.from_overrides(["n_head=four"])
    with pytest.raises(ConfigError, match="key=value"):
        Config.from_overrides(["n_head"])


def test_presets():
    assert preset("big").d_head == 256
    with pytest.raises(ConfigError):
        preset("huge")
