"""Parameter initializers (Paddle's ``fluid.initializer`` / ``paddle.nn.initializer``)."""

from . import _core

Initializer = _core.initializer.Initializer


def Constant(value: float = 0.0, force_cpu: bool = False) -> Initializer:
    """Fills the parameter with ``value``."""
    return _core.initializer.Constant(float(value))


def Uniform(low: float = -1.0, high: float = 1.0, seed: int = 0, name=None) -> Initializer:
    """Uniform in [low, high); seed 0 draws from the program's random seed."""
    return _core.initializer.Uniform(float(low), float(high), int(seed))


def Normal(loc: float = 0.0, scale: float = 1.0, seed: int = 0, mean=None, std=None, name=None) -> Initializer:
    """Gaussian with mean ``loc`` (or ``mean``) and deviation ``scale`` (or ``std``)."""
    return _core.initializer.Normal(float(loc if mean is None else mean), float(scale if std is None else std),
                                    int(seed))


def Xavier(uniform: bool = True, fan_in=None, fan_out=None, seed: int = 0) -> Initializer:
    """Glorot's initialisation from the parameter's fan-in and fan-out."""
    return _core.initializer.Xavier(bool(uniform), int(fan_in or 0), int(fan_out or 0), int(seed))


def XavierUniform(fan_in=None, fan_out=None, name=None) -> Initializer:
    """Paddle 2.x's ``nn.initializer.XavierUniform``."""
    return Xavier(True, fan_in, fan_out)


def XavierNormal(fan_in=None, fan_out=None, name=None) -> Initializer:
    """Paddle 2.x's ``nn.initializer.XavierNormal``."""
    return Xavier(False, fan_in, fan_out)


# Paddle 1.x spellings.
ConstantInitializer = Constant
UniformInitializer = Uniform
NormalInitializer = Normal
XavierInitializer = Xavier
