"""Paddle 1.x ``fluid.incubate.fleet.parameter_server``."""
