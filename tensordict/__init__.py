"""tensordict: a nested dict of tensors that shares batch dimensions and behaves like one tensor."""

from tensordict._keys import NestedKey, unravel_key

__all__ = ["NestedKey", "unravel_key"]
