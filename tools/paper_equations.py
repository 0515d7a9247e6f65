"""The paper's equation numbers, read from its LaTeX source, and the rewriting of citations in the docs.

The notebooks cite equations by the paper's LaTeX labels, "(e:qprime2)", which are unambiguous in the source but
mean nothing to a reader holding the PDF. `equation_numbers` numbers the equations as LaTeX does: every row of a
numbered display environment (equation, align, gather, ...) that has no \\nonumber or \\notag, in order, restarting
in the supplement (a document of its own, numbered from 1). A label defined in both parts (the supplement repeats
some equations) keeps its number in the main paper. `cite_equations` then rewrites "(e:qprime2)" as
"Eq. (15) (e:qprime2)" and "(e:nystromapprox, e:qprime2)" as "Eqs. (14), (15) (e:nystromapprox, e:qprime2)"
(a remark after the labels, "(e:kernelpdistance, squared)", is kept);
supplement equations read "Supp. Eq. (7)".
"""
import re
from pathlib import Path

PAPER = Path(__file__).resolve().parents[2] / 'shared' / 'paper' / 'combining-task-predictors-eccv2020.tex'
_ENVS = ('equation', 'align', 'gather', 'eqnarray', 'multline', 'flalign', 'alignat')
_re_env = re.compile(r'\\begin\{(' + '|'.join(_ENVS) + r')(\*?)\}(.*?)\\end\{\1\2\}', re.S)
_re_supplement = re.compile(r'\\section\*\{[^}]*Supplement')
_re_comment = re.compile(r'(?<!\\)%[^\n]*')


def _rows(body, env):
    "The rows of a display: split at top-level `\\\\` (not inside braces or nested environments)"
    if env in ('equation', 'multline'):
        return [body]
    rows, cur, depth, i = [], [], 0, 0
    while i < len(body):
        if body.startswith('\\begin{', i): depth += 1
        elif body.startswith('\\end{', i): depth -= 1
        elif body[i] == '{': depth += 1
        elif body[i] == '}': depth -= 1
        if depth == 0 and body.startswith('\\\\', i):
            rows.append(''.join(cur)); cur = []; i += 2
            continue
        cur.append(body[i]); i += 1
    rows.append(''.join(cur))
    if len(rows) > 1 and not rows[-1].strip():  # a trailing \\ opens no row
        rows.pop()
    return rows


def _number(part):
    labels, n = {}, 0
    for m in _re_env.finditer(part):
        env, star, body = m.groups()
        for row in _rows(body, env):
            numbered = not star and not re.search(r'\\(nonumber|notag)\b', row)
            n += numbered
            for lab in re.findall(r'\\label\{(e:[^}]+)\}', row):
                if numbered: labels.setdefault(lab, n)
    return labels


def equation_numbers(tex=None):
    "{label: 'Eq. (n)' or 'Supp. Eq. (n)'} for every numbered equation label of the paper (`tex`: its source text)"
    if tex is None:
        tex = PAPER.read_text(encoding='utf-8')
    doc = _re_comment.sub('', tex[tex.find('\\begin{document}'):])
    m = _re_supplement.search(doc)
    main, supp = (doc[:m.start()], doc[m.start():]) if m else (doc, '')
    out = {lab: f'Supp. Eq. ({n})' for lab, n in _number(supp).items()}
    out.update({lab: f'Eq. ({n})' for lab, n in _number(main).items()})
    return out


_re_cite = re.compile(r'(?<![\w.])\((e:[A-Za-z0-9]+(?:\s*,\s*e:[A-Za-z0-9]+)*)(?=\)|[,;]\s*(?!e:))')


def cite_equations(text, numbers):
    "Prefix each parenthesised group of labels in `text` with its equation numbers (unknown labels are left alone)"
    def rep(m):
        labs = [s.strip() for s in m.group(1).split(',')]
        if not all(l in numbers for l in labs):
            return m.group(0)
        start = m.start()
        if text[max(0, start - 12):start].rstrip().endswith(('Eq.', 'Eqs.')) or \
                re.search(r'Eqs?\. \(\d+\)(?:, \(\d+\))* $', text[max(0, start - 40):start]):
            return m.group(0)  # already numbered
        nums = [numbers[l] for l in labs]
        if len(nums) == 1:
            return f'{nums[0]} {m.group(0)}'
        kinds = {n.rsplit('(', 1)[0].strip() for n in nums}
        if len(kinds) == 1:
            kind = kinds.pop().replace('Eq.', 'Eqs.')
            return f"{kind} {', '.join('(' + n.rsplit('(', 1)[1] for n in nums)} {m.group(0)}"
        return f"{', '.join(nums)} {m.group(0)}"
    return _re_cite.sub(rep, text)


if __name__ == '__main__':
    for lab, num in sorted(equation_numbers().items(), key=lambda kv: (kv[1].startswith('Supp'), len(kv[1]), kv[1])):
        print(f'{num:16} {lab}')
