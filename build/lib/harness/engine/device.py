"""Devices: the plain flex device and its autodiff wrapper (burn's `Device::flex().autodiff()`)."""

from __future__ import annotations


class Device:
    """A compute device. Only two exist: `Device.flex()` and `Device.flex().autodiff()`.

    Both are singletons, so devices compare by identity (cheap on the hot path).
    """

    __slots__ = ("_autodiff", "_name")

    def __init__(self, name: str, autodiff: bool) -> None:
        self._name = name
        self._autodiff = autodiff

    @staticmethod
    def flex() -> Device:
        """The plain CPU device (burn's default `Flex` backend)."""
        return _FLEX

    def autodiff(self) -> Device:
        """The autodiff wrapper of this device; tensors created on it can be tracked."""
        return _FLEX_AUTODIFF

    def inner(self) -> Device:
        """The plain device under an autodiff device (itself for a plain device)."""
        return _FLEX

    def is_autodiff(self) -> bool:
        """True for the autodiff device."""
        return self._autodiff

    def __repr__(self) -> str:
        return f"Device.{self._name}"

    def __reduce__(self):
        return (_device_by_name, (self._name,))


def _device_by_name(name: str) -> Device:
    return _FLEX_AUTODIFF if name == _FLEX_AUTODIFF._name else _FLEX


_FLEX = Device("flex()", False)
_FLEX_AUTODIFF = Device("flex().autodiff()", True)
