"""What `harness.engine` exports: every config a port builds something from.

burn re-exports each crate's items at the crate root (`burn::optim::*` is `burn_optim::*`, whose
`optim/mod.rs` globs every optimizer file; `burn::nn::*` the same for burn-nn; burn
2c06be351006851d42fdb6df16b976f4a82d9747). The engine's equivalent is one flat surface: a
config reached only through a private file (`harness.engine.optim.base.MomentumConfig`) is one
a port cannot find.
"""

import importlib
import inspect
import pkgutil

import pytest

import harness.engine as engine

PACKAGES = ["optim", "lr_scheduler", "nn", "loss", "module"]  # store has no configs
# Python bases that burn has not: of the optimizer configs, of the encoder and decoder configs.
NOT_PUBLIC = {"OptimizerConfig", "TransformerStackConfig"}


def configs_defined_in(package: str) -> dict[str, type]:
    """Every public class named `...Config` defined in a module of the package."""
    root = importlib.import_module(f"harness.engine.{package}")
    modules = [root] + [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(root.__path__, f"{root.__name__}.")
    ]
    return {
        name: cls
        for mod in modules
        for name, cls in vars(mod).items()
        if inspect.isclass(cls)
        and cls.__module__ == mod.__name__
        and name.endswith("Config")
        and not name.startswith("_")
        and name not in NOT_PUBLIC
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_every_config_is_exported_by_its_package_and_by_harness_engine(package):
    configs = configs_defined_in(package)
    assert configs
    sub = importlib.import_module(f"harness.engine.{package}")
    for name, cls in configs.items():
        assert name in sub.__all__ and getattr(sub, name) is cls, (package, name)
        assert name in engine.__all__ and getattr(engine, name) is cls, (package, name)


def test_the_configs_the_issue_names():
    """Issue 27: `MomentumConfig` was reached through `harness.engine.optim.base`."""
    from harness.engine import MomentumConfig, WeightDecayConfig
    from harness.engine.optim import base

    assert MomentumConfig is base.MomentumConfig and WeightDecayConfig is base.WeightDecayConfig
    # burn-optim optim/momentum.rs: `#[config(default = 0.9)]`, `0.1`, `false`
    assert MomentumConfig() == MomentumConfig(momentum=0.9, dampening=0.1, nesterov=False)


def test_every_name_in_all_exists():
    assert sorted(set(engine.__all__)) == sorted(engine.__all__)  # no name listed twice
    assert [name for name in engine.__all__ if not hasattr(engine, name)] == []
