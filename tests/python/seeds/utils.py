# Seed 003's examples/quick-start/utils.py (the seed imports gen_data from it
# without listing it; this is seed 001's gen_data).
import numpy as np


def gen_data():
    return {"x": np.random.random(size=(128, 32)).astype('float32'),
            "y": np.random.randint(2, size=(128, 1)).astype('int64')}
