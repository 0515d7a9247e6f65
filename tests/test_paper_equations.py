"""The docs cite the paper's equations by number: tools/paper_equations.py reads the numbers from the LaTeX source."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from paper_equations import PAPER, cite_equations, equation_numbers  # noqa: E402

TEX = r"""
\begin{document}
\begin{align}
\label{e:a} x &= 1 % a comment \begin{align} that must not count
\end{align}
\begin{align*} y = 2 \end{align*}
\begin{align}
\label{e:b} p &= \begin{cases} 1 \\ 2 \end{cases} \\
q &= r \nonumber \\
\label{e:c} s &= t
\end{align}
\begin{equation} \label{e:d} u = v \end{equation}
\section*{Supplemental Document}
\begin{align} \label{e:s1} w = z \\ \label{e:d} u = v \end{align}
\end{document}
"""


def test_numbers_follow_latex():
    "rows of align are numbered unless \\nonumber; starred and commented displays do not count; cases rows neither"
    n = equation_numbers(TEX)
    assert n == {"e:a": "Eq. (1)", "e:b": "Eq. (2)", "e:c": "Eq. (3)", "e:d": "Eq. (4)", "e:s1": "Supp. Eq. (1)"}


def test_citations_are_rewritten_once():
    n = equation_numbers(TEX)
    assert cite_equations("by (e:b).", n) == "by Eq. (2) (e:b)."
    assert cite_equations("(e:a, e:c)", n) == "Eqs. (1), (3) (e:a, e:c)"
    assert cite_equations("(e:a, e:s1)", n) == "Eq. (1), Supp. Eq. (1) (e:a, e:s1)"
    assert cite_equations("Eq. (2) (e:b)", n) == "Eq. (2) (e:b)"          # already numbered
    assert cite_equations("(e:unknown) f(e:b)", n) == "(e:unknown) f(e:b)"  # unknown label, or a call
    assert cite_equations("(e:b, squared)", n) == "Eq. (2) (e:b, squared)"   # a remark after the label
    assert cite_equations("(e:b; see above)", n) == "Eq. (2) (e:b; see above)"


@pytest.mark.skipif(not PAPER.is_file(), reason="the paper's source is not beside the repository")
def test_the_papers_numbers():
    n = equation_numbers()
    assert n["e:ttc"] == "Eq. (1)" and n["e:normalization"] == "Eq. (2)"
    assert n["e:qprime"] == "Eq. (12)" and n["e:objectivef"] == "Eq. (13)"
    assert n["e:nystromapprox"] == "Eq. (14)" and n["e:qprime2"] == "Eq. (15)" and n["e:Ydecomp"] == "Eq. (17)"
    assert n["e:mtlenergy"] == "Supp. Eq. (10)" and n["e:kernelpdistance"] == "Supp. Eq. (27)"
