"""The harness that runs inside a check's own process (see sandbox.py); it imports nothing of attnlab.

Usage (by the sandbox only): ``python -I child.py ex3|ex4`` in a folder that holds student.py and the
inputs. It loads student.py, calls the student's code on the inputs and writes result.json:
``{"status": "ok" | "import" | "missing" | "signature" | "raises" | "returns", "detail": ..., ...}``.
The references and the expected answers are never here: the caller compares.
"""

import importlib.util
import inspect
import json
import math
import sys
import traceback
import warnings


def write(result):
    with open("result.json", "w", encoding="utf-8") as f:
        json.dump(result, f)


def last_line(e):
    """``ValueError: text`` and the line of student.py it came from."""
    tb = [fr for fr in traceback.extract_tb(e.__traceback__) if fr.filename.endswith("student.py")]
    where = f" (student.py line {tb[-1].lineno})" if tb else ""
    return f"{type(e).__name__}: {str(e)[:300]}{where}"


def load():
    spec = importlib.util.spec_from_file_location("student", "student.py")
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except BaseException as e:  # SyntaxError, ImportError, SystemExit, KeyboardInterrupt ... all are the file's
        write({"status": "import", "detail": last_line(e)})
        sys.exit(0)
    return mod


def needs(mod, name, *args, kind="function"):
    obj = getattr(mod, name, None)
    if obj is None or not callable(obj):
        write({"status": "missing", "detail": f"no {kind} named {name}"})
        sys.exit(0)
    try:
        inspect.signature(obj).bind(*args)
    except TypeError as e:
        write({"status": "signature", "detail": f"{name}{inspect.signature(obj)}: {e}"})
        sys.exit(0)
    except ValueError:  # no signature (a builtin): let the call decide
        pass
    return obj


# ---------------------------------------------------------------------------------- ex3
def ex3():
    import numpy as np

    mod = load()
    data = np.load("patterns.npz")
    keys = json.load(open("keys.json", encoding="utf-8"))
    centroid = needs(mod, "centroid", np.eye(2))
    values = []
    for key in keys:
        p = np.array(data[key], dtype=np.float64)
        p.setflags(write=False)  # the check's input is not the student's to change
        try:
            out = centroid(p)
        except BaseException as e:
            write({"status": "raises", "detail": last_line(e), "where": key})
            return
        try:
            pair = [float(x) for x in out]
        except (TypeError, ValueError):
            write(
                {
                    "status": "returns",
                    "detail": f"centroid returned {type(out).__name__}: {str(out)[:80]}",
                    "where": key,
                }
            )
            return
        if len(pair) != 2 or not all(math.isfinite(x) for x in pair):
            write({"status": "returns", "detail": f"centroid returned {str(out)[:80]}", "where": key})
            return
        values.append(pair)
    write({"status": "ok", "values": values})


# ---------------------------------------------------------------------------------- ex4
class Attn:
    def __init__(self):
        self.last_diag = None


class Block:
    def __init__(self):
        self.attn = Attn()


class ScriptedModel:
    """What a training loop hands the debugger: the chapter's names, a scripted run behind them.

    ``blocks[l].attn.last_diag`` holds this step's weight_entropy, logit_std and jacobian_fro, as
    after ``model(xb, record=True)`` (§1.13.1); ``attention_inputs(layer)`` gives the failing
    batch's (Q, K, V, mask) of that layer after a NaN loss; ``last_batch`` the batch itself."""

    def __init__(self, n_layer, arrays):
        self.blocks = [Block() for _ in range(n_layer)]
        self.n_layer = n_layer
        self.last_batch = arrays.get("batch")
        self._arrays = arrays
        self._nan = None

    def __call__(self, xb=None, record=False):
        return None  # the loop has recorded this step already

    def diagnostics(self):
        return [b.attn.last_diag for b in self.blocks]

    def attention_inputs(self, layer):
        if self._nan is None:
            raise RuntimeError("attention_inputs is for on_nan: no NaN has happened yet")
        layer = int(layer)
        if not 0 <= layer < self.n_layer:
            raise IndexError(f"layer {layer}: the model has {self.n_layer} layers")
        a = self._arrays
        return (
            a[f"{self._nan}_q{layer}"].copy(),
            a[f"{self._nan}_k{layer}"].copy(),
            a[f"{self._nan}_v{layer}"].copy(),
            a[f"{self._nan}_m{layer}"].copy(),
        )


def as_strings(x):
    if x is None:
        return []
    if isinstance(x, str):
        return [x]
    try:
        return [str(s)[:500] for s in list(x)[:100]]
    except TypeError:
        return [str(x)[:500]]


def ex4():
    import numpy as np

    mod = load()
    spec = json.load(open("scenarios.json", encoding="utf-8"))
    arrays = dict(np.load("arrays.npz"))
    cls = getattr(mod, "AttentionDebugger", None)
    if cls is None or not inspect.isclass(cls):
        write({"status": "missing", "detail": "no class named AttentionDebugger"})
        return
    out = []
    for sc in spec["scenarios"]:
        model = ScriptedModel(spec["n_layer"], arrays)
        got = {"name": sc["name"], "warnings": [], "nan": None}
        try:
            dbg = cls(model, log_every=spec["log_every"])
        except BaseException as e:
            write(
                {
                    "status": "signature" if isinstance(e, TypeError) else "raises",
                    "detail": "AttentionDebugger(model, log_every=50): " + last_line(e),
                    "where": sc["name"],
                }
            )
            return
        for name in ("check", "on_nan"):
            if not callable(getattr(dbg, name, None)):
                write({"status": "missing", "detail": f"AttentionDebugger has no method {name}"})
                return
        for step, diags in enumerate(sc["diags"]):
            for b, d in zip(model.blocks, diags):
                b.attn.last_diag = dict(zip(("weight_entropy", "logit_std", "jacobian_fro"), d))
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    ret = dbg.check(step)
            except BaseException as e:
                write(
                    {
                        "status": "signature" if isinstance(e, TypeError) and "positional" in str(e) else "raises",
                        "detail": "check(step): " + last_line(e),
                        "where": f"{sc['name']} step {step}",
                    }
                )
                return
            for text in as_strings(ret) + [str(w.message)[:500] for w in caught]:
                got["warnings"].append([step, text])
            if sc.get("nan_step") == step:
                model._nan = sc["name"]
                try:
                    with warnings.catch_warnings(record=True):
                        warnings.simplefilter("always")
                        ret = dbg.on_nan()
                except BaseException as e:
                    write(
                        {
                            "status": "signature" if isinstance(e, TypeError) and "positional" in str(e) else "raises",
                            "detail": "on_nan(): " + last_line(e),
                            "where": sc["name"],
                        }
                    )
                    return
                got["nan"] = nan_answer(ret)
                break
        got["warnings"] = got["warnings"][:200]
        out.append(got)
    write({"status": "ok", "scenarios": out})


STAGE_NAMES = {"①": 1, "②": 2, "③": 3, "④": 4, "scores": 1, "mask": 2, "exp": 3, "normalize": 4, "norm": 4}


def stage_of(x):
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return int(x)
    s = str(x)
    for k, v in STAGE_NAMES.items():
        if k in s:
            return v
    try:
        return int(s)
    except ValueError:
        return None


def nan_answer(ret):
    """(layer, stage) from a tuple, a list or a dict with keys layer and stage; None otherwise."""
    try:
        if isinstance(ret, dict):
            layer, stage = ret.get("layer"), ret.get("stage")
        else:
            layer, stage = list(ret)[:2]
        return [int(layer), stage_of(stage)]
    except (TypeError, ValueError):
        return {"unreadable": str(ret)[:200]}


if __name__ == "__main__":
    {"ex3": ex3, "ex4": ex4}[sys.argv[1]]()
