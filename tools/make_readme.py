#!/usr/bin/env python
"""Write README.md from nbs/index.ipynb (what `nbdev_readme` does, without Quarto).

    python tools/make_readme.py                  # nbs/index.ipynb -> README.md
    python tools/make_readme.py --check          # exit 1 when README.md is not up to date
    python tools/make_readme.py --nb X.ipynb --out Y.md

Cells with `#| hide` (or `#| include: false`) are removed; `#| echo: false` cells keep only their outputs;
`#| output: false` cells keep only their source; `#|` directive lines (and lines ending in `#| hide_line`) are
stripped from the code that is shown; relative links are rewritten for the README's folder.
Images in outputs are written next to the README, in `<stem>_files/`.
"""
import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# RegexRemovePreprocessor uses re.match on the whole source: a `#| hide` line (not `#| hide_line`) among the
# leading directive lines of a cell
HIDE_PATTERN = r'^(?:[ \t]*#\|[^\n]*\n)*[ \t]*#\|[ \t]*hide[ \t]*(?:\n|$)'
sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_docs import _parse_directives, _re_directive  # noqa: E402
_re_hide_line = re.compile(r'#\|\s*hide_line\s*$')  # nbdev: a code line ending so is not shown


def _directives(source):
    "Leading `#| key: value` lines of a cell -> {key: value} (the same parser the docs build uses)."
    return _parse_directives(source)


_re_mdlink = re.compile(r'(\]\(\s*<?)([^)\s>]+)')


def _relink(md, nb_dir, out_dir):
    "Relative link targets in `md`, written for a notebook in `nb_dir`, made relative to `out_dir`"
    import os
    def fix(m):
        t = m.group(2)
        if re.match(r'^([a-zA-Z][a-zA-Z0-9+.-]*:|#|/)', t): return m.group(0)  # URL, anchor or absolute path
        new = os.path.relpath(os.path.join(nb_dir, t), out_dir).replace(os.sep, '/')
        return m.group(1) + new
    return _re_mdlink.sub(fix, md)


def notebook_to_markdown(nb_path, out_dir=None):
    """Markdown text and resources (images) for the notebook at `nb_path`; relative links are rewritten to work
    from `out_dir` (default: the notebook's folder)"""
    import nbformat
    from nbconvert import MarkdownExporter
    from nbconvert.preprocessors import RegexRemovePreprocessor, TagRemovePreprocessor

    nb = nbformat.read(str(nb_path), as_version=4)
    cells = []
    for c in nb.cells:
        if c.cell_type == 'raw': continue  # front matter and Quarto raw cells are not README material
        if c.cell_type == 'markdown' and out_dir is not None:
            c.source = _relink(c.source, Path(nb_path).resolve().parent, Path(out_dir).resolve())
        if c.cell_type == 'code':
            d = _directives(c.source)
            if d.get('include') == 'false': continue
            tags = set(c.metadata.get('tags', []))
            if d.get('echo') == 'false': tags.add('remove-input')
            if d.get('output') == 'false': tags.add('remove-output')
            if 'hide' not in d:
                c.source = '\n'.join(l for l in c.source.splitlines()
                                     if not _re_directive.match(l) and not _re_hide_line.search(l)).strip('\n')
                if not c.source.strip(): tags.add('remove-input')
            if tags: c.metadata['tags'] = sorted(tags)
        cells.append(c)
    nb.cells = cells
    if not nb.metadata.get('language_info', {}).get('name'):  # unexecuted notebooks: fence code as the kernel's
        lang = nb.metadata.get('kernelspec', {}).get('language') or 'python'
        nb.metadata['language_info'] = {**nb.metadata.get('language_info', {}), 'name': lang}
    exporter = MarkdownExporter()
    exporter.register_preprocessor(RegexRemovePreprocessor(patterns=[HIDE_PATTERN]), enabled=True)
    exporter.register_preprocessor(TagRemovePreprocessor(
        remove_cell_tags={'remove-cell'}, remove_input_tags={'remove-input'},
        remove_all_outputs_tags={'remove-output'}), enabled=True)
    body, resources = exporter.from_notebook_node(nb, resources={'output_files_dir': f'{Path(nb_path).stem}_files'})
    body = re.sub(r'\n{3,}', '\n\n', body).strip() + '\n'
    return body, resources


def make_readme(nb_path, out_path, check=False):
    "Write `out_path` from `nb_path`; with `check`, only report whether it is up to date. Returns True if it was."
    out_path = Path(out_path)
    body, resources = notebook_to_markdown(nb_path, out_path.parent)
    old = out_path.read_text(encoding='utf-8') if out_path.exists() else None
    if check: return old == body
    out_path.write_text(body, encoding='utf-8')
    for name, data in resources.get('outputs', {}).items():
        f = out_path.parent / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
    return old == body


def main(argv=None):
    from nbdev.config import get_config
    cfg = get_config(path=ROOT)
    p = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    p.add_argument('--nb', default=str(cfg.config_path / cfg.nbs_path / cfg.get('readme_nb', 'index.ipynb')))
    p.add_argument('--out', default=str(cfg.config_path / 'README.md'))
    p.add_argument('--check', action='store_true', help='exit 1 when the README is out of date')
    a = p.parse_args(argv)
    if not Path(a.nb).exists():
        print(f'error: {a.nb} does not exist', file=sys.stderr)
        return 1
    same = make_readme(a.nb, a.out, check=a.check)
    if a.check:
        if not same: print(f'{a.out} is out of date: run python tools/make_readme.py', file=sys.stderr)
        return 0 if same else 1
    print(f'wrote {a.out} from {a.nb}' + (' (unchanged)' if same else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
