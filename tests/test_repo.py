"""Repository-level checks: the README's test command is the one CI runs, and no data files are committed."""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def test_readme_gives_two_setup_commands():
    cmds = _readme_commands()
    assert len(cmds) >= 2
    assert "predictability demo" in cmds[0] and "pip install" in cmds[0]
    assert "nbdev_test" in cmds[1] and "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    block = re.search(r"# >>> README test command\n(.*?)\n# <<< README test command", ci, flags=re.S).group(1)
    assert block.strip() == _readme_commands()[1].strip()


def test_no_data_files_are_committed():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    bad = [f for f in files if re.search(r"\.(mat|npy|npz|parquet|pkl|h5)$", f)]
    assert not bad, f"data files are committed: {bad}"
