"""Each integration's entry point, without its optional extra, says in one line which extra
installs it."""

from __future__ import annotations

import importlib
import sys

import pytest

from stackelberg.interop import MissingExtra, require


@pytest.mark.parametrize(
    ("package", "entry_point"),
    [
        ("pettingzoo", "stackelberg.interop.pettingzoo"),
        ("textarena", "stackelberg.interop.textarena"),
        ("textarena", "stackelberg.interop.secret_mafia"),
        ("textarena", "stackelberg.interop.mafia_tournament"),
    ],
)
def test_without_the_extra_the_entry_point_names_it(monkeypatch, package, entry_point):
    importlib.import_module(entry_point)  # installed here: imported, then hidden
    monkeypatch.setitem(sys.modules, package, None)  # as if not installed
    for name in [m for m in sys.modules if m.startswith("stackelberg.interop.")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(MissingExtra) as err:
        importlib.import_module(entry_point)
    assert str(err.value) == (
        f"{package} is not installed; install the extra: pip install -e '.[{package}]'"
    )


def test_a_missing_package_names_its_extra_and_a_broken_one_is_not_hidden():
    with pytest.raises(
        MissingExtra, match=r"^no_such_package_here is not installed; .*\.\[textarena\]'$"
    ):
        require("no_such_package_here", "textarena")
    with pytest.raises(ModuleNotFoundError, match="no_such_inner"):  # the package's own import
        require("no_such_inner.module", "textarena")
