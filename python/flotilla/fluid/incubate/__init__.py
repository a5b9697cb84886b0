"""Paddle 1.x ``fluid.incubate``: the 1.x fleet modules."""
