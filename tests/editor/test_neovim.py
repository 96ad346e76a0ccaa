"""The Neovim configurations of docs/editors.md, run in the Neovim installed (headless): a spec
with a syntax error opened in it gets the server's diagnostic. The first snippet needs 0.8 or
newer; the second is for 0.7 (Debian 12 ships 0.7.2), where the first does nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="Neovim is not installed")

#: Waits for the server's diagnostics on the open buffer, then writes what it got.
PROBE = """
vim.wait(WAIT_MS, function() return #vim.diagnostic.get(0) > 0 end, 100)
local first = vim.diagnostic.get(0)[1]
io.stdout:write("filetype=" .. vim.bo.filetype .. " diagnostics=" .. #vim.diagnostic.get(0)
  .. " first=" .. (first and first.message:gsub("\\n.*", "") or "") .. "\\n")
"""


def snippets() -> list[str]:
    page = (ROOT / "docs" / "editors.md").read_text()
    return re.findall(r"```lua\n(.*?)```", page, flags=re.S)


def version() -> tuple[int, int]:
    shown = subprocess.run([NVIM, "--version"], capture_output=True, text=True).stdout
    major, minor = re.match(r"NVIM v(\d+)\.(\d+)", shown).groups()
    return int(major), int(minor)


def opened_in_neovim(tmp_path, config: str, wait_ms: int = 30000) -> str:
    (tmp_path / "init.lua").write_text(config)
    (tmp_path / "probe.lua").write_text(PROBE.replace("WAIT_MS", str(wait_ms)))
    (tmp_path / "bad.ver").write_text("query q {\n    input x\n    maximize\n}\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["XDG_STATE_HOME"] = env["XDG_DATA_HOME"] = str(tmp_path / "state")  # no LSP log at home
    ran = subprocess.run(
        [NVIM, "--headless", "--noplugin", "-u", "init.lua", "-i", "NONE", "bad.ver",
         "-c", "luafile probe.lua", "-c", "qa!"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return ran.stdout + ran.stderr


def test_the_snippet_for_this_neovim_gets_the_servers_diagnostics(tmp_path):
    new, old = snippets()
    said = opened_in_neovim(tmp_path, new if version() >= (0, 8) else old)
    assert "filetype=ver diagnostics=1 first=unexpected `}`" in said, said


def test_the_snippet_for_0_8_does_nothing_on_0_7(tmp_path):
    if version() >= (0, 8):
        pytest.skip("Neovim 0.8 or newer is installed")
    new, _ = snippets()
    said = opened_in_neovim(tmp_path, new, wait_ms=3000)
    assert "filetype= diagnostics=0" in said, said  # .ver is not even a filetype there
