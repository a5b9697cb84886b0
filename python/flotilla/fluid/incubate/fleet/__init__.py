"""Paddle 1.x ``fluid.incubate.fleet``: ``collective`` (data parallel) and
``parameter_server.distribute_transpiler``; both drive the process-wide
fleet of the C++ core, as ``flotilla.distributed.fleet`` does."""
