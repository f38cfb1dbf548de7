"""Wrote ``sklearn_adm-0.1.0.pkl`` with sklearn-adm 0.1.0 (its flat layout, commit f06a4d2):
fitted models, a stream in the middle of ``partial_fit``, a scorer and a regularizer, each
with what it computed then. Kept to show how the file was made; it runs against 0.1.0 only.

    python tests/data/make_pickles_0_1_0.py tests/data/sklearn_adm-0.1.0.pkl
"""

import pickle
import sys
import warnings


def main(path):
    import torch

    from sklearn_adm import ICA, PICA, ADMRegularizer, DependenceScorer, NonlinearPICA
    from sklearn_adm.datasets import make_nonlinear_mixture

    warnings.simplefilter("ignore")
    X, _ = make_nonlinear_mixture(300, random_state=0)
    quick = dict(n_components=2, max_iter=20, random_state=0)
    models = {
        "PICA": PICA(**quick).fit(X),
        "ICA": ICA(**quick).fit(X),
        "NonlinearPICA": NonlinearPICA(hidden_layer_sizes=(8,), **quick).fit(X),
        "PICA_partial_fit": PICA(**quick).partial_fit(X[:200]),
    }
    payload = {name: (model, model.transform(X)) for name, model in models.items()}
    payload["X"] = X
    scorer = DependenceScorer("pearson")
    payload["DependenceScorer"] = (scorer, scorer.score(X))
    torch.manual_seed(0)
    regularizer = ADMRegularizer(X.shape[1])
    z = torch.as_tensor(X, dtype=torch.float32)
    regularizer.critic_step(z)
    payload["ADMRegularizer"] = (regularizer, float(regularizer.loss(z)))
    with open(path, "wb") as file:
        pickle.dump(payload, file, protocol=4)


if __name__ == "__main__":
    main(sys.argv[1])
