"""tensordict.nn.utils: the positive mappings and the process-wide modes of the modules."""

from __future__ import annotations

import threading

import pytest
import torch

from tensordict import TensorDict
from tensordict.nn import (
    TensorDictModule,
    TensorDictModuleBase,
    add_custom_mapping,
    biased_softplus,
    composite_lp_aggregate,
    inv_softplus,
    mappings,
    set_composite_lp_aggregate,
    set_skip_existing,
    skip_existing,
)
from tensordict.nn.utils import _set_dispatch_td_nn_modules, _set_skip_existing_None, expln


def test_inv_softplus_inverts_softplus():
    """softplus(inv_softplus(x)) == x for tensors and floats."""
    x = torch.tensor([0.5, 1.0, 3.0])
    torch.testing.assert_close(torch.nn.functional.softplus(inv_softplus(x)), x)
    assert isinstance(inv_softplus(2.0), float)
    assert torch.nn.functional.softplus(torch.tensor(inv_softplus(2.0))).item() == pytest.approx(
        2.0
    )


def test_inv_softplus_stays_finite_at_and_below_zero():
    """Values at or below 0 have no preimage; the result is clamped, not -inf or nan."""
    out = inv_softplus(torch.tensor([0.0, -1.0]))
    assert torch.isfinite(out).all()


def test_biased_softplus_gives_bias_at_zero_and_stays_above_min():
    """biased_softplus(bias, min_val) is bias at 0 and above min_val everywhere."""
    module = biased_softplus(3.0, min_val=0.5)
    torch.testing.assert_close(module(torch.zeros(2)), torch.full((2,), 3.0))
    assert (module(torch.full((4,), -50.0)) >= 0.5).all()


def test_expln_is_exp_below_zero_and_log_above():
    """expln is exp(x) for x <= 0 and log1p(x) + 1 above, finite for large inputs."""
    x = torch.tensor([-2.0, 0.0, 2.0, 1e30])
    out = expln(x)
    torch.testing.assert_close(
        out[:3], torch.stack([x[0].exp(), torch.tensor(1.0), x[2].log1p() + 1])
    )
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", ["softplus", "exp", "relu", "expln", "biased_softplus", "none"])
def test_mappings_known_names(name):
    """Each documented name gives a callable keeping the shape."""
    assert mappings(name)(torch.randn(3)).shape == (3,)


def test_mappings_biased_softplus_with_arguments():
    """'biased_softplus_<bias>_<min>' gives bias at zero."""
    torch.testing.assert_close(
        mappings("biased_softplus_2.0_0.1")(torch.zeros(1)), torch.tensor([2.0])
    )
    torch.testing.assert_close(mappings("biased_softplus_2.0")(torch.zeros(1)), torch.tensor([2.0]))


def test_mappings_bad_names():
    """An unknown name raises NotImplementedError; a malformed biased_softplus one ValueError."""
    with pytest.raises(NotImplementedError, match="no_such_mapping"):
        mappings("no_such_mapping")
    with pytest.raises(ValueError, match="biased_softplus"):
        mappings("biased_softplus_1_2_3")


def test_add_custom_mapping_is_found_by_name():
    """A registered mapping is returned by mappings()."""
    add_custom_mapping("test_nn_utils_triple", lambda x: 3 * x)
    torch.testing.assert_close(
        mappings("test_nn_utils_triple")(torch.ones(2)), torch.full((2,), 3.0)
    )


class _Writer(TensorDictModuleBase):
    in_keys = []
    out_keys = ["out"]

    def __init__(self):
        super().__init__()
        self.calls = 0

    @set_skip_existing(None)
    def forward(self, tensordict):
        self.calls += 1
        return tensordict.set("out", torch.ones(()))


def test_skip_existing_block_skips_modules_whose_outputs_exist():
    """Inside set_skip_existing(), a module whose out_keys exist returns its input untouched."""
    module = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
    td = TensorDict(x=torch.zeros(()), y=torch.zeros(()))
    assert skip_existing() is False
    with set_skip_existing():
        assert skip_existing() is True
        assert module(td)["y"] == 0
    assert module(td)["y"] == 1


def test_skip_existing_with_a_key_list_only_skips_listed_outputs():
    """A list mode skips only the modules whose out_keys are all in the list."""
    module = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
    td = TensorDict(x=torch.zeros(()), y=torch.zeros(()))
    with set_skip_existing(["z"]):
        assert module(td)["y"] == 1
    with set_skip_existing([("y",)]):
        assert skip_existing() == ["y"]
        assert module(td)["y"] == 1  # unchanged: 1 from the call above


def test_skip_existing_never_skips_a_module_reading_its_output():
    """A module whose in_keys share a key with its out_keys always runs."""
    module = TensorDictModule(lambda y: y + 1, in_keys=["y"], out_keys=["y"])
    td = TensorDict(y=torch.zeros(()))
    with set_skip_existing():
        assert module(td)["y"] == 1


def test_skip_existing_none_decorator_follows_the_enclosing_block():
    """@set_skip_existing(None) runs unless the caller opened a skipping block."""
    module = _Writer()
    module(TensorDict(out=torch.zeros(())))
    assert module.calls == 1
    with set_skip_existing(True):
        module(TensorDict(out=torch.zeros(())))
    assert module.calls == 1


def test_skip_existing_none_as_a_block_raises():
    """set_skip_existing(None) is a decorator only."""
    with pytest.raises(RuntimeError, match="None"):
        with set_skip_existing(None):
            pass


def test_skip_existing_decorator_checks_the_argument_name():
    """The decorated method's first argument must be named tensordict."""
    with pytest.raises(RuntimeError, match="tensordict"):

        class Bad(TensorDictModuleBase):
            @set_skip_existing()
            def forward(self, data):
                return data


def test_skip_existing_thread_local_stays_in_its_thread():
    """A thread_local block does not change what other threads read."""
    seen = []
    ready, done = threading.Event(), threading.Event()

    def other():
        ready.wait()
        seen.append(skip_existing())
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with set_skip_existing(True, thread_local=True):
        ready.set()
        done.wait()
        assert skip_existing() is True
    thread.join()
    assert seen == [False]
    assert skip_existing() is False


def test_private_skip_existing_none_kept_for_torchrl():
    """_set_skip_existing_None() skips the call inside a skipping block only."""

    class Writer(TensorDictModuleBase):
        in_keys = []
        out_keys = ["out"]

        @_set_skip_existing_None()
        def forward(self, tensordict):
            return tensordict.set("out", torch.ones(()))

    td = TensorDict(out=torch.zeros(()))
    with set_skip_existing(True):
        assert Writer()(td)["out"] == 0
    assert Writer()(td)["out"] == 1


def test_dispatch_switch_turns_keyword_calls_off():
    """Under _set_dispatch_td_nn_modules(False) a module takes tensordicts only."""
    module = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
    assert module(x=torch.zeros(())) == 1
    with _set_dispatch_td_nn_modules(False):
        assert module(TensorDict(x=torch.zeros(())))["y"] == 1
        with pytest.raises(TypeError):
            module(x=torch.zeros(()))
    assert module(x=torch.zeros(())) == 1


def test_composite_lp_aggregate_default_block_and_set():
    """False by default; True in a block; set()/unset() change it outside a block."""
    assert composite_lp_aggregate() is False
    with set_composite_lp_aggregate(True):
        assert composite_lp_aggregate() is True
        with set_composite_lp_aggregate(False):
            assert composite_lp_aggregate() is False
        assert composite_lp_aggregate() is True
    setter = set_composite_lp_aggregate(True)
    setter.set()
    try:
        assert composite_lp_aggregate() is True
    finally:
        setter.unset()
    assert composite_lp_aggregate() is False


def test_composite_lp_aggregate_decorator():
    """As a decorator, the mode holds during the call only."""

    @set_composite_lp_aggregate(True)
    def read():
        return composite_lp_aggregate()

    assert read() is True
    assert composite_lp_aggregate() is False
