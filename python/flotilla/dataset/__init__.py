"""Datasets (Paddle's ``paddle.dataset``) that Flotilla ships or finds locally."""

from . import cifar, common, mnist, uci_housing  # noqa: F401
