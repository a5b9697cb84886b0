# Seed 004's examples/wide_and_deep/reader.py: samples of (13 dense
# features, 26 slot ids, click label). The seed reads Criteo files; this
# one makes Criteo-shaped samples whose click depends on the features, so
# the AUC a model reaches says whether it learnt.
import numpy as np

from model import DENSE_DIM, SPARSE_FEATURE_NUMBER, SPARSE_SLOTS


def data_reader(samples=int(__import__("os").getenv("WIDE_DEEP_SAMPLES", "800")), seed=None):
    def reader():
        worker = int(__import__("os").getenv("PADDLE_TRAINER_ID", "0"))
        rng = np.random.RandomState(seed if seed is not None else 17 + worker)
        w = np.random.RandomState(3).normal(size=DENSE_DIM)
        for _ in range(samples):
            dense = rng.uniform(0, 1, DENSE_DIM).astype("float32")
            ids = rng.randint(0, 50, SPARSE_SLOTS)
            score = dense @ w + (ids[0] % 2) - 0.5 * (ids[1] % 3)
            click = int(score + rng.normal(scale=0.5) > np.median(w) * DENSE_DIM / 2)
            yield [dense] + [np.array([i * 1000 + int(v)], "int64") % SPARSE_FEATURE_NUMBER
                             for i, v in enumerate(ids)] + [np.array([click], "int64")]
    return reader
