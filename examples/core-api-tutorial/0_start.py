"""Stage 0: a script det runs as a trial. It trains as long as it decides and exits 0."""

import logging
import time

import determined as det


def main(increment_by):
    x = 0
    for batch in range(100):
        x += increment_by
        time.sleep(0.02)
        logging.info(f"x is now {x}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    main(increment_by=1)
