"""``attnlab serve``'s side of the train page: the corpus and, for any config and seed, the initial
weights and batches (:mod:`attnlab.web.trainexport`), built on demand and kept for a few configs."""

from __future__ import annotations

import collections
import threading
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from ..errors import AttnlabError
from . import trainexport as te

KEEP = 4  # bundles kept in memory (a pair of the big model is two)


class InitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    set: dict[str, Any] = Field(default_factory=dict, max_length=64)


def add_train_routes(app: FastAPI) -> None:
    cache: collections.OrderedDict[str, bytes] = collections.OrderedDict()
    lock = threading.Lock()

    def cached(key: str, build) -> bytes:
        with lock:
            if key in cache:
                cache.move_to_end(key)
                return cache[key]
        blob = build()
        with lock:
            cache[key] = blob
            while len(cache) > KEEP:
                cache.popitem(last=False)
        return blob

    def binary(blob: bytes) -> Response:
        return Response(blob, media_type="application/octet-stream", headers={"Cache-Control": "no-store"})

    @app.get("/api/train/corpus")
    def train_corpus() -> Response:
        from ..config import Config

        return binary(cached("corpus", lambda: te.corpus_bundle(Config())))

    @app.post("/api/train/init")
    def train_init(req: InitRequest) -> Response:
        from ..config import Config

        try:
            cfg = Config().replace(**req.set)
            te.check_browser_config(cfg)
        except (AttnlabError, TypeError) as e:
            raise HTTPException(422, f"配置无效 invalid config: {e}") from None
        key = cfg.run_key() + f":{cfg.max_steps}"
        return binary(cached(key, lambda: te.init_bundle(cfg)))
