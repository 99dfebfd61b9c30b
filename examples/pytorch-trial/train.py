"""The Fashion-MNIST trial under Determined's Trainer API: `entrypoint: python3 train.py`
(with several slots: `python3 -m determined.launch.torch_distributed python3 train.py`).
How long to train and how often to validate are the script's to decide."""

import logging

import determined as det
from determined import pytorch

from model_def import FashionMNISTTrial


def main() -> None:
    info = det.get_cluster_info()
    assert info is not None, "run it on det: `det experiment create const.yaml .`"
    hparams = info.trial.hparams
    with pytorch.init(hparams=hparams) as context:
        trial = FashionMNISTTrial(context)
        trainer = pytorch.Trainer(trial, context)
        trainer.fit(max_length=pytorch.Epoch(hparams.get("epochs", 1)),
                    validation_period=pytorch.Batch(hparams.get("validation_batches", 200)),
                    reporting_period=pytorch.Batch(hparams.get("reporting_batches", 50)),
                    latest_checkpoint=info.latest_checkpoint)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    main()
