"""The documentation site (tools/build_docs.py) and the README (tools/make_readme.py).

The site is built once per module, then every notebook's page is opened in headless Chromium (`--dump-dom`) to
check what a reader sees: typeset maths, show_doc sections for the exported API, no resource loaded from outside
the site, figures and tables from the saved outputs, and the paper's page order. Without Chromium the browser
tests skip, unless the environment variable CI is set, where they fail.
"""
import ast
import base64
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / 'tools'
sys.path.insert(0, str(TOOLS))
import build_docs  # noqa: E402
import make_readme  # noqa: E402

NBS = ROOT / 'nbs'
DOCS = ROOT / '_docs'
CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync']
# The page's own signal that it is as a reader sees it (tools/docs_static/fit-math.js: MathJax typeset, equations fitted)
PAGE_READY = "document.documentElement.getAttribute('data-typeset') === 'done'"
READY_TIMEOUT = 120   # seconds of real time for one page to signal; a page that does not is loaded once more
RESOURCE_RELS = {'stylesheet', 'preload', 'modulepreload', 'prefetch', 'icon', 'shortcut', 'apple-touch-icon',
                 'manifest', 'mask-icon'}
_re_external = re.compile(r'^\s*(https?:)?//', re.IGNORECASE)


def _nbpath2html(rel):
    from nbdev.doclinks import _nbpath2html
    return _nbpath2html(Path(rel)).as_posix()


def _notebooks():
    "Notebooks under nbs/ as nbdev sees them (relative paths), index included"
    return sorted(p.relative_to(NBS) for p in NBS.rglob('*.ipynb')
                  if not any(part.startswith(('.', '_')) for part in p.relative_to(NBS).parts))


def _pages():
    "(page, notebook) for every page that must exist: index.html and one per notebook"
    pages = {_nbpath2html(nb): nb.as_posix() for nb in _notebooks()}
    pages.setdefault('index.html', '(generated: nbs/index.ipynb does not exist yet)')
    return sorted(pages.items(), key=lambda kv: (kv[0] != 'index.html', kv[0]))


PAGES = _pages()


# ----------------------------------------------------------------------------------------------------------------
# fixtures

@pytest.fixture(scope='module')
def site():
    "Build the site once (a subprocess with this Python, as a user runs it)"
    r = subprocess.run([sys.executable, str(TOOLS / 'build_docs.py')], cwd=ROOT, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, f'build_docs.py failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}'
    assert re.search(r'built .* in [\d.]+ s', r.stdout), r.stdout
    return DOCS


@pytest.fixture(scope='module')
def chromium():
    exe = next((shutil.which(n) for n in ('chromium', 'chromium-browser', 'google-chrome') if shutil.which(n)), None)
    if exe is None:
        msg = 'chromium is not installed (apt-get install -y chromium): the browser checks of the docs did not run'
        if os.environ.get('CI'): pytest.fail(msg)
        pytest.skip(msg)
    return exe


class _Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands on the
    child's fd 3, replies on its fd 4, JSON messages ended by NUL): no port, no extra package. `load` opens a page
    and waits, in real time, until a JavaScript condition holds; nothing depends on how fast the machine is."""
    def __init__(self, exe, width=1280, height=1000):
        self.profile = tempfile.TemporaryDirectory(prefix='chromium-')
        import fcntl
        to_child, self._out = os.pipe()     # we write commands, Chromium reads them on its fd 3
        self._in, from_child = os.pipe()    # Chromium writes replies on its fd 4, we read them
        # the child's ends moved above 9, so that `3<&a 4>&b` never overwrites one with the other; bash (dash takes
        # one-digit fds only) puts them on fds 3 and 4 and execs Chromium (no preexec_fn: pages load in threads)
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_child, from_child)]
        os.close(to_child); os.close(from_child)
        to_child, from_child = ends
        self.proc = subprocess.Popen([shutil.which('bash') or '/bin/bash', '-c', f'exec "$0" "$@" 3<&{to_child} 4>&{from_child}', exe,
                                      *CHROMIUM_FLAGS, f'--window-size={width},{height}',
                                      f'--user-data-dir={self.profile.name}', '--remote-debugging-pipe', 'about:blank'],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     pass_fds=(to_child, from_child))
        os.close(to_child); os.close(from_child)
        self._buf, self._id, self.size = b'', 0, (width, height)

    def _send(self, method, session=None, **params):
        self._id += 1
        msg = {'id': self._id, 'method': method, 'params': params, **({'sessionId': session} if session else {})}
        os.write(self._out, json.dumps(msg).encode() + b'\0')
        while True:                          # replies and events interleave; events are skipped
            while b'\0' not in self._buf:
                chunk = os.read(self._in, 1 << 20)
                if not chunk: raise RuntimeError(f'chromium exited: {self.proc.stderr.read()[-2000:]!r}')
                self._buf += chunk
            raw, self._buf = self._buf.split(b'\0', 1)
            reply = json.loads(raw)
            if reply.get('id') == self._id:
                if 'error' in reply: raise RuntimeError(f'{method}: {reply["error"]}')
                return reply.get('result', {})

    def _eval(self, session, expr):
        r = self._send('Runtime.evaluate', session, expression=expr, returnByValue=True)
        return r.get('result', {}).get('value')

    def load(self, url, ready=PAGE_READY, timeout=READY_TIMEOUT):
        "The DOM of `url` once `ready` (a JavaScript expression) is true; None when it is not within `timeout` s"
        import time
        target = self._send('Target.createTarget', url='about:blank')['targetId']
        session = self._send('Target.attachToTarget', targetId=target, flatten=True)['sessionId']
        try:
            self._send('Emulation.setDeviceMetricsOverride', session, width=self.size[0], height=self.size[1],
                       deviceScaleFactor=1, mobile=False)
            self._send('Page.navigate', session, url=url)
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                if self._eval(session, f'document.readyState === "complete" && ({ready})'):
                    return self._eval(session, 'document.documentElement.outerHTML')
                time.sleep(0.1)
            return None
        finally:
            self._send('Target.closeTarget', targetId=target)

    def close(self):
        try:
            os.close(self._out)
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()
        finally:
            os.close(self._in)
            self.profile.cleanup()


def dump_dom(exe, url, ready=PAGE_READY, width=1280):
    "The DOM of `url` once the page signals `ready`, as Chromium serialises it; one more load if it does not signal"
    browser = _Chromium(exe, width)
    try:
        for attempt in range(2):
            dom = browser.load(url, ready)
            if dom is not None:
                return '<!DOCTYPE html>' + dom
        raise AssertionError(f'{url}: the page did not signal ({ready}) within {READY_TIMEOUT} s, twice')
    finally:
        browser.close()


@pytest.fixture(scope='module')
def doms(chromium, site):
    "DOM of every derivation page (index and one per notebook), loaded from file:// in parallel"
    urls = {page: (site / page).as_uri() for page, _ in PAGES}
    with ThreadPoolExecutor(max_workers=4) as ex:
        futs = {page: ex.submit(dump_dom, chromium, url) for page, url in urls.items()}
        return {page: f.result() for page, f in futs.items()}


# ----------------------------------------------------------------------------------------------------------------
# helpers

def _text(fragment):
    return html.unescape(re.sub(r'<[^>]+>', '', fragment))


def _headings(dom):
    "(start, end, text) of every h1..h6 in `dom`, permalink marks removed"
    return [(m.start(), m.end(), _text(m.group(2)).strip().rstrip('#¶').strip())
            for m in re.finditer(r'<h([1-6])\b[^>]*>(.*?)</h\1>', dom, flags=re.DOTALL)]


def _article(dom):
    "The page's main content (not the sidebar or the in-page table of contents)"
    m = re.search(r'<article\b.*?</article>', dom, flags=re.DOTALL)
    return m.group(0) if m else dom


class _Resources(HTMLParser):
    "(tag, url) of every <script src> and resource-loading <link href> in a page"
    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'script' and a.get('src'): self.found.append((tag, a['src']))
        if tag == 'link' and a.get('href'):
            rels = set((a.get('rel') or '').lower().split())
            if rels & RESOURCE_RELS or a.get('as'): self.found.append((tag, a['href']))


def external_resources(page_html):
    p = _Resources()
    p.feed(page_html)
    return [f'<{t}> {u}' for t, u in p.found if _re_external.match(u)]


def exported_api():
    "{page: [names]}: the public functions and classes of each module, where nbdev documents them"
    modidx = {}
    exec((ROOT / 'predictability' / '_modidx.py').read_text(encoding='utf-8'), modidx)
    res = {}
    for mod, syms in modidx['d']['syms'].items():
        path = ROOT / (mod.replace('.', '/') + '.py')
        if not path.exists(): continue
        all_ = set()
        tree = ast.parse(path.read_text(encoding='utf-8'))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, 'id', '') == '__all__' for t in node.targets):
                all_ = set(ast.literal_eval(node.value))
        for sym, (loc, _) in syms.items():
            name = sym[len(mod) + 1:]
            if '.' in name or name.startswith('_') or name not in all_: continue
            res.setdefault(loc.split('#')[0], []).append(name)
    return res


def _module_all(page):
    "The `__all__` of the module documented on `page` (empty when the page documents none)."
    modidx = {}
    exec((ROOT / 'predictability' / '_modidx.py').read_text(encoding='utf-8'), modidx)
    for mod, syms in modidx['d']['syms'].items():
        path = ROOT / (mod.replace('.', '/') + '.py')
        if path.exists() and any(loc.split('#')[0] == page for loc, _ in syms.values()):
            for node in ast.parse(path.read_text(encoding='utf-8')).body:
                if isinstance(node, ast.Assign) and any(getattr(t, 'id', '') == '__all__' for t in node.targets):
                    return list(ast.literal_eval(node.value))
    return []


def assert_show_doc(dom, name, page):
    "A heading reading `name`, followed (before the next heading) by a code block with its signature `name(`"
    hs = _headings(dom)
    hits = [i for i, (_, _, t) in enumerate(hs) if t == name]
    assert hits, f'{page}: no show_doc heading for {name}; headings: {[t for _, _, t in hs]}'
    i = hits[0]
    block = dom[hs[i][1]:hs[i + 1][0] if i + 1 < len(hs) else len(dom)]
    pres = [_text(p) for p in re.findall(r'<pre\b.*?</pre>', block, flags=re.DOTALL)]
    short = name.split('.')[-1]
    assert any(re.search(rf'\b{re.escape(short)}\(', p) for p in pres), \
        f'{page}: show_doc of {name} has no signature block; code after it: {pres[:2]}'


# ----------------------------------------------------------------------------------------------------------------
# the site, as files

def test_pages_exist(site):
    assert (NBS / '01_core.ipynb').exists()
    for page, nb in PAGES:
        assert (site / page).is_file(), f'{nb} has no page {page}'
    assert (site / 'core.html').is_file() and (site / 'index.html').is_file()
    assert (site / 'search.html').is_file() and (site / 'searchindex.js').is_file()
    assert (site / '_static' / 'mathjax' / 'tex-chtml.js').is_file(), 'MathJax is not shipped with the site'


def test_no_external_resources_in_files(site):
    "No page loads a script, stylesheet, font or icon from outside the site (it must work offline)"
    bad = []
    for f in sorted(site.rglob('*.html')):
        bad += [f'{f.relative_to(site)}: {r}' for r in external_resources(f.read_text(encoding='utf-8'))]
    for f in sorted(site.rglob('*.css')):
        css = f.read_text(encoding='utf-8', errors='replace')
        bad += [f'{f.relative_to(site)}: {m}' for m in
                re.findall(r'(?:url\(\s*["\']?|@import\s+["\'])((?:https?:)?//[^"\')\s]+)', css)]
    assert not bad, 'external resources:\n' + '\n'.join(bad)


def test_toc_in_paper_order(site):
    "index first, then the notebooks by numeric prefix, each titled by its notebook's title"
    idx = (site / 'index.html').read_text(encoding='utf-8')
    m = re.search(r'<div class="toctree-wrapper.*?</div>', idx, flags=re.DOTALL)
    assert m, 'index.html has no toctree'
    hrefs = re.findall(r'<a class="reference internal" href="([^"#]+)"', m.group(0))
    nbs = [nb for nb in _notebooks() if nb.name != 'index.ipynb']

    def key(nb):
        n = re.match(r'\d+', nb.name)
        return (nb.parent.as_posix(), n is None, int(n.group()) if n else 0, nb.name)
    assert hrefs == [_nbpath2html(nb) for nb in sorted(nbs, key=key)]
    for href, nb in zip(hrefs, sorted(nbs, key=key)):
        title = re.search(r'<title>(.*?)(?:&#8212;|—|</title>)', (site / href).read_text(encoding='utf-8')).group(1)
        cells = json.loads((NBS / nb).read_text(encoding='utf-8'))['cells']
        h1 = next((re.search(r'^#\s+(.+?)\s*$', ''.join(c['source']), re.M) for c in cells
                   if c['cell_type'] == 'markdown' and re.search(r'^#\s', ''.join(c['source']), re.M)), None)
        plain = lambda t: re.sub(r'\s+', ' ', re.sub(r'[$*_`\\]', '', html.unescape(t))).strip()
        if h1: assert plain(title) == plain(h1.group(1)), (href, title, h1.group(1))


def test_saved_figures_and_tables_appear(site):
    "Every figure and HTML table in a shown output of a committed notebook is on its page"
    staged = ROOT / '_proc' / '_build' / 'src'
    for page, nb in PAGES:
        src = staged / Path(page).with_suffix('.ipynb')
        if not src.exists(): continue
        n_img, n_table = 0, 0
        for c in json.loads(src.read_text(encoding='utf-8'))['cells']:
            tags = set(c.get('metadata', {}).get('tags', []))
            if c['cell_type'] != 'code' or tags & {'remove-output', 'remove-cell'}: continue
            for o in c.get('outputs', []):
                data = o.get('data', {})
                n_img += any(k in data for k in ('image/png', 'image/jpeg', 'image/svg+xml'))
                n_table += 'text/html' in data and '<table' in ''.join(data['text/html'])
        out = (site / page).read_text(encoding='utf-8')
        assert out.count('<img') >= n_img, f'{page}: {n_img} figures saved in {nb}, {out.count("<img")} shown'
        assert out.count('<table') >= n_table, f'{page}: {n_table} tables saved in {nb}'


# ----------------------------------------------------------------------------------------------------------------
# the site, in a browser

@pytest.mark.parametrize('page', [p for p, _ in PAGES])
def test_page_in_browser(doms, site, page):
    dom = doms[page]
    raw = (site / page).read_text(encoding='utf-8')
    art = _article(dom)
    assert '#|' not in _text(art), f'{page}: a `#|` directive line is shown'
    assert '#LNone' not in raw and 'nbdev-source' not in raw, f'{page}: a source link (there is no public source URL)'
    # maths: every page with LaTeX has it typeset by the offline MathJax, without TeX errors
    n_math = raw.count('class="math')
    if n_math:
        n = dom.count('<mjx-container')
        assert n > 0, f'{page}: LaTeX is on the page but MathJax typeset nothing'
        assert n >= n_math, f'{page}: {n_math} formulas, {n} typeset'
        err = re.search(r'<mjx-merror.*?</mjx-merror>', dom, flags=re.DOTALL)
        assert not err, f'{page}: MathJax reports a TeX error: {_text(err.group(0))[:300]}'
    # the exported API is documented where nbdev puts it
    for name in exported_api().get(page, []):
        assert_show_doc(art, name, page)
    # nothing from outside the site, including what scripts added at run time
    assert not external_resources(dom), f'{page}: {external_resources(dom)}'


# Pages that open with their API (issue 11): the public functions and classes a user came for, each with its
# parameter table, come first; the derivation, the internals and their tests follow under a heading of their own.
API_FIRST_PAGES = (
    'core.html',
    'opc.html',
    'lpc.html',
    'kernels.html',
    'npc_exact.html',
    'kstats.html',
    'nystrom.html',
    'ard.html',
    'combination.html',
    'labelfree.html',
    'mtl.html',
    'tuning.html',
    'cuda.html',
    'toy.html',
    'datasets.html',
    'demo.html',
    'cli.html',
    'fileio.html',
    'experiments/gl.html',
    'experiments/protocol.html',
    'experiments/pays.html',
    'experiments/rankers.html',
    'experiments/pubfig.html',
    'experiments/labelfree_cases.html',
    'experiments/out_of_sample.html',
)
_re_internals_heading = re.compile(r'derivation|internals', re.IGNORECASE)


def _parameters(page, name):
    "The named parameters of the public function or class `name` documented on `page` (no self, *args, **kwargs)"
    import importlib
    import inspect
    modidx = {}
    exec((ROOT / 'predictability' / '_modidx.py').read_text(encoding='utf-8'), modidx)
    mod = next(m for m, syms in modidx['d']['syms'].items()
               if any(loc.split('#')[0] == page and s == f'{m}.{name}' for s, (loc, _) in syms.items()))
    obj = getattr(importlib.import_module(mod), name)
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in inspect.signature(obj).parameters.values() if p.kind in kinds and p.name != 'self']


def _show_doc_headings(dom):
    "(index in _headings, name) of every show_doc heading: a name followed by a code block with its signature"
    hs = _headings(dom)
    out = []
    for i, (_, end, t) in enumerate(hs):
        if not re.fullmatch(r'[A-Za-z_][\w.]*', t): continue
        block = dom[end:hs[i + 1][0] if i + 1 < len(hs) else len(dom)]
        pres = [_text(p) for p in re.findall(r'<pre\b.*?</pre>', block, flags=re.DOTALL)]
        if any(re.search(rf'\b{re.escape(t.split(".")[-1])}\(', p) for p in pres): out.append((i, t))
    return out


def test_api_first_pages_are_listed():
    pages = {p for p, _ in PAGES}
    assert set(API_FIRST_PAGES) <= pages, set(API_FIRST_PAGES) - pages


@pytest.mark.parametrize('page', API_FIRST_PAGES)
def test_api_has_parameter_tables(doms, page):
    "Every public function and class of the page shows a table of its parameters under its show_doc heading"
    art = _article(doms[page])
    hs = _headings(art)
    names = exported_api().get(page, [])
    assert names, f'{page}: no public API found'
    bad = []
    for name in names:
        params = _parameters(page, name)
        if not params: continue
        i = next((k for k, (_, _, t) in enumerate(hs) if t == name), None)
        assert i is not None, f'{page}: no show_doc heading for {name}'
        block = art[hs[i][1]:hs[i + 1][0] if i + 1 < len(hs) else len(art)]
        tables = [_text(t) for t in re.findall(r'<table\b.*?</table>', block, flags=re.DOTALL)]
        missing = [p for p in params if not any(re.search(rf'\b{re.escape(p)}\b', t) for t in tables)]
        if not tables: bad.append(f'{name}: no parameter table')
        elif missing: bad.append(f'{name}: parameters missing from its table: {missing}')
    assert not bad, f'{page}:\n' + '\n'.join(bad)


@pytest.mark.parametrize('page', API_FIRST_PAGES)
def test_api_comes_first(doms, page):
    "The first show_doc on the page is a public one, above every internal one and above the derivation heading"
    art = _article(doms[page])
    hs = _headings(art)
    api = exported_api()
    public = set(api.get(page, []))
    public |= {n for names in api.values() for n in names} & set(_module_all(page))   # its re-exports (`CombineResult`)
    docs = _show_doc_headings(art)
    assert docs, f'{page}: no show_doc headings'
    first_i, first = docs[0]
    assert first in public, f'{page}: the first show_doc is {first}, not one of the public {sorted(public)}'
    internal = [(i, t) for i, t in docs if t.split('.')[0] not in public or t.split('.')[-1].startswith('_')]
    assert not internal or first_i < internal[0][0], f'{page}: {internal[0][1]} is documented above the API'
    deriv = [i for i, (_, _, t) in enumerate(hs) if _re_internals_heading.search(t)]
    assert deriv, f'{page}: no heading for the derivation or internals; headings: {[t for _, _, t in hs]}'
    assert first_i < deriv[0], f'{page}: the API ({first}) comes after "{hs[deriv[0]][2]}"'
    api = [t for i, t in docs if i < deriv[0]]
    assert api and all(t in public for t in api), f'{page}: above "{hs[deriv[0]][2]}": {api}'


# The page that helps a reader choose a method (issue 11, item 6) comes right after the index, before the methods
CHOOSING_PAGE = 'choosing.html'


def test_choosing_page_comes_first(doms):
    "The choosing page is the first page after the index, in the toctree and in the sidebar, with its method table"
    toc = re.findall(r'<a class="reference internal" href="([^"#]+)"',
                     re.search(r'<div class="toctree-wrapper.*?</div>', doms['index.html'], flags=re.DOTALL).group(0))
    assert toc[0] == CHOOSING_PAGE, f'the first page after the index is {toc[0]}, not {CHOOSING_PAGE}'
    art = _article(doms[CHOOSING_PAGE])
    tables = [_text(t) for t in re.findall(r'<table\b.*?</table>', art, flags=re.DOTALL)]
    methods = next((t for t in tables if 'assumes' in t), '')
    for m in ('NPC', 'LPC', 'OPC', 'ARD', 'joint denoising', 'MTL', 'GL'):
        assert m in methods, f'{CHOOSING_PAGE}: the method table does not list {m}'
    assert any('N=37,322' in t for t in tables), f'{CHOOSING_PAGE}: no measured times at N = 37,322'
    for href in ('labelfree.html', 'experiments/pays.html', 'experiments/pubfig.html'):
        assert f'href="{href}' in art, f'{CHOOSING_PAGE}: no link to {href}'


def test_internal_links_resolve(site):
    "Every link from a page to another page of the site (or an anchor in it) points at something that exists"
    bad = []
    for f in sorted(site.rglob('*.html')):
        if f.name.startswith('_layout_probe'): continue
        page = f.read_text(encoding='utf-8')
        for href in re.findall(r'<a\b[^>]*\bhref="([^"]+)"', _article(page)):
            if re.match(r'^[a-z][a-z0-9+.-]*:', href, flags=re.IGNORECASE): continue   # http:, mailto:, ...
            path, _, frag = html.unescape(href).partition('#')
            target = (f.parent / path).resolve() if path else f
            if not target.is_file():
                bad.append(f'{f.relative_to(site)}: {href} (no such page)')
            elif frag and target.suffix == '.html' and f'id="{frag}"' not in target.read_text(encoding='utf-8'):
                bad.append(f'{f.relative_to(site)}: {href} (no such anchor)')
    assert not bad, 'broken links:\n' + '\n'.join(bad[:30])


def test_core_page_documents_normalize(doms):
    art = _article(doms['core.html'])
    assert_show_doc(art, 'normalize', 'core.html')
    assert 'def' in _text(art) and 'normalize(' in _text(art)
    assert art.count('<mjx-container') > 10


def test_sidebar_order(doms):
    "The navigation sidebar lists the pages in the toctree's order"
    nav = re.search(r'<nav class="[^"]*bd-docs-nav.*?</nav>', doms['core.html'], flags=re.DOTALL)
    assert nav, 'no sidebar navigation'
    hrefs = ['core.html' if h == '#' else h.split('#')[0] for h in re.findall(r'href="([^"]+)"', nav.group(0))]
    toc = re.findall(r'<a class="reference internal" href="([^"#]+)"',
                     re.search(r'<div class="toctree-wrapper.*?</div>', doms['index.html'],
                               flags=re.DOTALL).group(0))
    assert hrefs[0] == 'index.html' and hrefs[1:] == toc


_LAYOUT_PROBE = """<script>
const probe = () => {
  const W = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > W + 1)
    out.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + W + ' px');
  for (const e of document.querySelectorAll('article *')) {
    if (e.closest('mjx-assistive-mml')) continue;          // MathJax's screen-reader copy: clipped, never shown
    const r = e.getBoundingClientRect(), cs = getComputedStyle(e);
    if (r.width > 0 && r.right > W + 1) out.push('wider than the window: <' + e.tagName.toLowerCase() + ' class="' + e.className + '"> ends at ' + Math.round(r.right) + ' px');
    if (e.scrollWidth > e.clientWidth + 1 && ['auto', 'scroll'].includes(cs.overflowX))
      out.push('scrolls sideways: <' + e.tagName.toLowerCase() + ' class="' + e.className + '"> ' + e.scrollWidth + ' > ' + e.clientWidth + ' px');
  }
  const d = document.createElement('pre'); d.id = 'layout-report'; d.textContent = JSON.stringify(out.slice(0, 10));
  document.body.appendChild(d);
};
// measure once the page signals that MathJax typeset it and the wide equations are fitted (fit-math.js)
new MutationObserver((_, obs) => {
  if (document.documentElement.getAttribute('data-typeset') === 'done') { obs.disconnect(); probe(); }
}).observe(document.documentElement, {attributes: true});
if (document.documentElement.getAttribute('data-typeset') === 'done') probe();
</script>"""


def layout_problems(exe, site, page, width):
    "What sticks out of, or scrolls inside, a `width`-pixel window on `page` (a probe script in a copy of the page)"
    probe = (site / page).parent / f'_layout_probe_{width}_{Path(page).name}'   # beside the page: same relative links
    probe.write_text((site / page).read_text(encoding='utf-8').replace('</body>', _LAYOUT_PROBE + '</body>'),
                     encoding='utf-8')
    try:
        dom = dump_dom(exe, probe.as_uri(), "document.getElementById('layout-report') !== null", width)
    finally:
        probe.unlink()
    m = re.search(r'<pre id="layout-report"[^>]*>(.*?)</pre>', dom, flags=re.DOTALL)   # the theme adds tabindex
    return json.loads(html.unescape(m.group(1)))


@pytest.mark.parametrize('width', [1280, 800])
def test_everything_fits_the_window(chromium, site, width):
    "No page scrolls sideways, and no code block, signature, table or formula is cut off behind a scrollbar"
    pages = [p for p, _ in PAGES]
    with ThreadPoolExecutor(max_workers=4) as ex:
        found = dict(zip(pages, ex.map(lambda p: layout_problems(chromium, site, p, width), pages)))
    bad = {p: v for p, v in found.items() if v}
    assert not bad, f'at {width} px:\n' + '\n'.join(f'{p}: {v}' for p, v in bad.items())


_re_label = re.compile(r'(?<![\w\\])e:[A-Za-z][A-Za-z0-9]*')


def _prose(page_html):
    "The visible text of a page's article outside code blocks and typeset maths (code shows the notebooks' source)"
    a = re.sub(r'<(pre|mjx-container|script|style)\b.*?</\1>', ' ', _article(page_html), flags=re.DOTALL)
    return re.sub(r'\s+', ' ', _text(a))


def test_no_bare_equation_labels(site):
    """The notebooks cite "Eq. (n) (e:label)"; the built pages show the paper's numbers only, never a label, whether
    or not the paper's source is beside the repository (tools/equation_numbers.json)"""
    bad, cited = [], 0
    for f in sorted(site.rglob('*.html')):
        if f.name in ('search.html', 'genindex.html'): continue
        text = _prose(f.read_text(encoding='utf-8'))
        cited += len(re.findall(r'\b(?:Eqs?\.) \(?\d+', text))
        bad += [f'{f.relative_to(site)}: ...{text[max(0, m.start() - 50):m.end() + 10]}...'
                for m in _re_label.finditer(text)]
    assert cited > 20, 'the pages cite almost no equations: the check is not looking at them'
    assert not bad, f'{len(bad)} equation labels shown as text:\n' + '\n'.join(bad[:20])


def test_equations_are_cited_by_number(doms):
    "In the browser too: pages cite the paper's equations by number, and no label is left in the text"
    cited, bad = 0, []
    for page, dom in doms.items():
        text = _prose(dom)
        cited += len(re.findall(r'\b(?:Eqs?\.) \(?\d+', text))
        bad += [f'{page}: ...{text[max(0, m.start() - 40):m.end() + 10]}...' for m in _re_label.finditer(text)]
    assert cited > 20, 'the pages cite almost no equations: the check is not looking at them'
    assert not bad, 'equation labels shown as text:\n' + '\n'.join(bad[:20])


def test_citations_render_as_numbers():
    "tools/build_docs.py's rendering of the notebooks' citations: numbers in, labels out, remarks and calls kept"
    n = {'e:a': 'Eq. (1)', 'e:b': 'Eq. (2)', 'e:s': 'Supp. Eq. (7)'}
    r = lambda t: build_docs.render_citations(t, n)
    assert r('by Eq. (2) (e:b).') == 'by Eq. (2).'
    assert r('$Q$ (e:a, e:b), then') == '$Q$ (Eqs. 1, 2), then'
    assert r('(e:a, e:s)') == '(Eq. 1, Supp. Eq. 7)'
    assert r('(e:b, squared)') == '(Eq. 2, squared)' and r('Eq. (2) (e:b, squared)') == 'Eq. (2) (squared)'
    assert r('Eqs. (1), (2) (e:a, e:b)') == 'Eqs. (1), (2)'
    assert r('f(e:b) and (e:unknown)') == 'f(e:b) and (e:unknown)'    # a call, and a label the paper lacks


def test_equation_table_is_the_papers():
    "tools/equation_numbers.json, which the build uses without the paper's source, holds the paper's numbers"
    from paper_equations import PAPER, equation_numbers
    table = json.loads(build_docs.EQUATIONS_JSON.read_text(encoding='utf-8'))
    assert table['e:qprime2'] == 'Eq. (15)' and table['e:kernelpdistance'] == 'Supp. Eq. (27)'
    if not PAPER.is_file():
        pytest.skip("the paper's source is not beside the repository: the table is checked against it elsewhere")
    assert table == equation_numbers()
    cited = {m for nb in _notebooks() for m in _re_label.findall((NBS / nb).read_text(encoding='utf-8'))}
    assert cited <= set(table), f'labels cited in the notebooks but not in the paper: {sorted(cited - set(table))}'


def test_search_works_offline(chromium, site):
    dom = dump_dom(chromium, (site / 'search.html').as_uri() + '?q=normalize',
                   "/found \\d+ pages? matching/.test(document.body.innerText)")
    m = re.search(r'found (\d+) pages? matching', dom)
    assert m and int(m.group(1)) > 0, 'Sphinx search found nothing for "normalize"'
    assert 'core.html' in dom


# ----------------------------------------------------------------------------------------------------------------
# the post-processing, on a synthetic nbdev-processed notebook (no browser, no repo notebooks needed)

PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='


def example_function(x: float,  # the input $x$
                     k: int = 3,  # how many
                     ) -> float:  # the result
    "Docstring with maths, $\\alpha^2$."
    return x * k


class _Cfg(dict):
    __getattr__ = dict.__getitem__


def _code(src, outputs=(), **meta):
    return {'cell_type': 'code', 'execution_count': None, 'metadata': dict(meta), 'outputs': list(outputs),
            'source': src}


def _synthetic_proc_nb():
    from nbdev.showdoc import show_doc
    sd = ('---\n\n[source](https://github.com/x/y/blob/main/m.py#L1){target="_blank" '
          'style="float:right; font-size:smaller"}\n\n' + show_doc(example_function)._repr_markdown_().lstrip('-\n'))
    md = lambda s: {'cell_type': 'markdown', 'metadata': {}, 'source': s}
    return {'nbformat': 4, 'nbformat_minor': 5, 'metadata': {'kernelspec': {'name': 'python3', 'language': 'python',
                                                                             'display_name': 'Python 3'}},
            'cells': [
                {'cell_type': 'raw', 'metadata': {}, 'source': '---\ndescription: A synthetic page.\n'
                 'output-file: synth.html\ntitle: Synthetic derivation\n\n---\n\n'},
                md('<!-- WARNING: THIS FILE WAS AUTOGENERATED! DO NOT EDIT! -->'),
                md('## Maths\n\nInline $a^2$ and display\n\n$$\\int_0^1 x\\,dx=\\tfrac12.$$\n\n'
                   'See [`example_function`](https://docs.example/synth.html#example_function) and '
                   '[the other page](01_other.ipynb).'),
                _code('#| echo: false\n#| output: asis\nshow_doc(example_function)',
                      [{'output_type': 'execute_result', 'execution_count': None, 'metadata': {},
                        'data': {'text/markdown': sd, 'text/plain': '<nbdev ShowDoc>'}}]),
                _code('#| echo: false\nSECRET_INPUT = 1\nplot()',
                      [{'output_type': 'display_data', 'metadata': {},
                        'data': {'image/png': PNG_1PX, 'text/plain': '<Figure>'}}]),
                _code('#| code-fold: show\nshown_code = 2\nshown_code',
                      [{'output_type': 'execute_result', 'execution_count': None, 'metadata': {},
                        'data': {'text/html': '<table class="dataframe"><tr><td>42</td></tr></table>',
                                 'text/plain': '42'}}]),
                _code('#| output: false\nprint("SECRET" + "_OUTPUT")',
                      [{'output_type': 'stream', 'name': 'stdout', 'text': 'SECRET_OUTPUT\n'}]),
            ]}


def test_synthetic_notebook_renders(tmp_path):
    proc = tmp_path / '_proc'
    proc.mkdir()
    (proc / '03_synth.ipynb').write_text(json.dumps(_synthetic_proc_nb()), encoding='utf-8')
    (proc / '01_other.ipynb').write_text(json.dumps({'nbformat': 4, 'nbformat_minor': 5, 'metadata': {}, 'cells': [
        {'cell_type': 'raw', 'metadata': {}, 'source': '---\ntitle: Other\n---\n'}]}), encoding='utf-8')
    cfg = _Cfg(title='synthproj', author='a', copyright='c', version='0', description='d',
               doc_host='https://docs.example', doc_baseurl='/')
    pages = build_docs.stage(cfg, proc, tmp_path / 'src')
    assert pages == [('index', 'synthproj'), ('other', 'Other'), ('synth', 'Synthetic derivation')]
    out = tmp_path / 'html'
    r = subprocess.run([sys.executable, '-m', 'sphinx', '-b', 'html', '-q', str(tmp_path / 'src'), str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    assert 'WARNING' not in r.stderr, r.stderr
    assert build_docs.postprocess_html(cfg, out) == []
    page = (out / 'synth.html').read_text(encoding='utf-8')
    art = _article(page)
    hs = [t for _, _, t in _headings(art)]
    assert hs[0] == 'Synthetic derivation' and 'Maths' in hs
    assert_show_doc(art, 'example_function', 'synth.html')  # a real section: in the in-page TOC too
    assert 'id="example-function"' in art and 'href="#example-function"' in page
    assert re.search(r'<table\b.*?\bx\b.*?the input.*?\bk\b.*?how many.*?Returns.*?the result.*?</table>', art,
                     flags=re.DOTALL), 'the docments of example_function are not a parameter table'
    assert 'href="synth.html#example-function"' in art  # the doc_host link became relative
    assert 'href="other.html"' in art  # links to `NN_name.ipynb` follow nbdev's page names
    assert 'github.com/x/y' not in page and '>source<' not in art and 'target="_blank"' not in art   # no source links
    assert '<img' in art and '<table class="dataframe"' in art
    assert 'SECRET_INPUT' not in art and 'SECRET_OUTPUT' not in art and 'shown_code' in art
    assert '#|' not in _text(art) and 'WARNING: THIS FILE' not in art and '---' not in _text(art)
    assert art.count('class="math') >= 3
    idx = (out / 'index.html').read_text(encoding='utf-8')
    assert idx.index('href="other.html"') < idx.index('href="synth.html"')


def test_parameter_table_from_docments():
    "show_doc's docments signature becomes a plain signature and a table of parameter, type, default and details"
    from nbdev.showdoc import show_doc

    def f(a: int,  # the count, $n$
          b=(1, 2),  # a pair | with a bar
          *args,
          c: str = 'x#y',  # a string with a hash
          **kw) -> float:  # the result
        "Doc."
    md = build_docs._clean_markdown_output(show_doc(f)._repr_markdown_())
    sig = re.search(r'```python\n(.*?)\n```', md, flags=re.DOTALL).group(1)
    assert '#' not in sig.replace("'x#y'", '') and sig.startswith('def f(') and '->float:' in sig
    rows = [l for l in md.splitlines() if l.startswith('| ')]
    assert rows[0] == '|  | **Type** | **Default** | **Details** |' and rows[1] == '| -- | -- | -- | -- |'
    assert '| `a` | `int` |  | the count, $n$ |' in rows
    assert '| `b` | `tuple` | `(1, 2)` | a pair \\| with a bar |' in rows
    assert "| `c` | `str` | `'x#y'` | a string with a hash |" in rows
    assert rows[-1] == '| **Returns** | `float` |  | the result |'

    def g(x, y):
        "No docments: left as show_doc renders it."
    md = show_doc(g)._repr_markdown_()
    assert build_docs._parameter_table(md) == md

    def h(x,  # only a comment
          y):
        "No types, no defaults: no empty columns."
    rows = [l for l in build_docs._clean_markdown_output(show_doc(h)._repr_markdown_()).splitlines() if l.startswith('| ')]
    assert rows == ['|  | **Details** |', '| -- | -- |', '| `x` | only a comment |', '| `y` |  |']


def test_multiline_docstring_is_italic_throughout():
    "show_doc italicises a docstring's first line only; the docs italicise its whole paragraph"
    from nbdev.showdoc import show_doc

    def f(x: int,  # the input
          ) -> int:  # the output
        """First line of the docstring,
        second line with maths $a_b$ and `code`."""
    md = build_docs._clean_markdown_output(show_doc(f)._repr_markdown_())
    assert '*First line of the docstring,*\n*second line with maths $a_b$ and `code`.*' in md, md
    assert '| `x` | `int` | the input |' in md


# ----------------------------------------------------------------------------------------------------------------
# the README

def _nb(cells):
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata['kernelspec'] = {'name': 'python3', 'language': 'python', 'display_name': 'Python 3'}
    for kind, src, *outs in cells:
        c = nbformat.v4.new_markdown_cell(src) if kind == 'md' else nbformat.v4.new_code_cell(src)
        if outs: c.outputs = [nbformat.v4.new_output('stream', name='stdout', text=outs[0])]
        nb.cells.append(c)
    return nb


def test_make_readme(tmp_path):
    import nbformat
    (tmp_path / 'nbs').mkdir()
    nb = _nb([('md', '# proj\n\n> What it does, with $x^2$.\n\nSee [the core](01_core.ipynb) and '
               '[the web](https://example.com).'),
              ('code', '#| hide\nfrom proj import HIDDEN_IMPORT'),
              ('code', '#|hide\nHIDDEN_TOO = 1'),
              ('code', '#| echo: false\n#| hide\nHIDDEN_THREE = 1'),
              ('code', '#| eval: false\nvisible_call(1)  # kept', 'VISIBLE_OUTPUT\n'),
              ('code', '#| echo: false\nECHO_SOURCE = 1', 'ECHO_OUTPUT\n'),
              ('code', 'HIDE_LINE = 1  #| hide_line\nshown_line = 2'),
              ('code', '#| include: false\nINCLUDE_FALSE = 1')])
    src = tmp_path / 'nbs' / 'index.ipynb'
    nbformat.write(nb, str(src))
    out = tmp_path / 'README.md'
    assert make_readme.main(['--nb', str(src), '--out', str(out)]) == 0
    md = out.read_text(encoding='utf-8')
    assert md.startswith('# proj\n\n> What it does, with $x^2$.')
    for hidden in ('HIDDEN_IMPORT', 'HIDDEN_TOO', 'HIDDEN_THREE', 'ECHO_SOURCE', 'INCLUDE_FALSE', 'HIDE_LINE', '#|'):
        assert hidden not in md, hidden
    assert '```python\nvisible_call(1)  # kept\n```' in md and 'VISIBLE_OUTPUT' in md and 'ECHO_OUTPUT' in md
    assert 'shown_line = 2' in md
    assert '[the core](nbs/01_core.ipynb)' in md and '[the web](https://example.com)' in md
    assert make_readme.main(['--nb', str(src), '--out', str(out), '--check']) == 0
    out.write_text(md + 'stale\n', encoding='utf-8')
    assert make_readme.main(['--nb', str(src), '--out', str(out), '--check']) == 1


def test_readme_from_index(tmp_path):
    src = NBS / 'index.ipynb'
    if not src.exists(): pytest.skip('nbs/index.ipynb does not exist yet')
    out = tmp_path / 'README.md'
    r = subprocess.run([sys.executable, str(TOOLS / 'make_readme.py'), '--out', str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    md = out.read_text(encoding='utf-8')
    assert md.startswith('# ') and '#|' not in md
