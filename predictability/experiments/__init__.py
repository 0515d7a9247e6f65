"""The paper's experiments: the initial rankers, the GL baseline, the evaluation protocol, PubFig, and when combination pays."""
