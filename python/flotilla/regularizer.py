"""Weight decay (Paddle's ``fluid.regularizer`` / ``paddle.regularizer``)."""

from . import _core

L2Decay = _core.regularizer.L2Decay
L1Decay = _core.regularizer.L1Decay
L2DecayRegularizer = L2Decay
L1DecayRegularizer = L1Decay
WeightDecayRegularizer = _core.regularizer.WeightDecayRegularizer
