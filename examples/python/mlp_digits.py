"""Trains a small multi-layer perceptron on the handwritten digits from Python.

The same network and training as examples/mlp_train.cpp (64-64-10, ReLU,
batch 32, SGD with learning rate 0.1, 20 epochs, He-initialised weights),
pushed op by op from Python: every step returns at once, and the program
waits only when it reads the epoch's mean loss and the test accuracy.

Data: the digits (1797 8x8 images, 10 classes) that python3-sklearn installs
as a CSV, else generated blobs of the same shape.

    python examples/python/mlp_digits.py [--epochs 20] [--sync] [--device cpu|emulated]

--sync reads the loss after every step, as a synchronous framework would.
Prints the loss of every epoch and the test accuracy; exits with 1 if the
loss did not fall (over two or more epochs) or the accuracy is below
--min-accuracy.
"""

import argparse
import gzip
import sys
import time

import numpy as np

import depengine as de

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def load_digits():
    try:
        with gzip.open(DIGITS, "rt") as f:
            data = np.loadtxt(f, delimiter=",", dtype=np.float32)
        return data[:, :64] / 16.0, data[:, 64].astype(np.int32), DIGITS
    except OSError:
        rng = np.random.default_rng(7)
        centres = rng.standard_normal((10, 64)).astype(np.float32)
        labels = (np.arange(1800) % 10).astype(np.int32)
        features = centres[labels] + 0.7 * rng.standard_normal((1800, 64)).astype(np.float32)
        return features, labels, "generated blobs"


class Mlp:
    def __init__(self, layers, lr, device, engine, seed=1):
        self.lr = lr
        self.weights = [
            de.normal((i, o), 0.0, np.sqrt(2.0 / i), seed=seed + k, device=device, engine=engine)
            for k, (i, o) in enumerate(zip(layers[:-1], layers[1:]))
        ]
        self.biases = [de.zeros(o, device=device, engine=engine) for o in layers[1:]]

    def forward(self, x):
        h = x
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w + b
            if k + 1 < len(self.weights):
                h = de.relu(h)
        return h

    def train_step(self, x, y):
        inputs = [x]
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            z = inputs[-1] @ w
            z += b
            if k + 1 < len(self.weights):
                de.relu(z, out=z)
            inputs.append(z)
        loss, grad = de.softmax_cross_entropy(inputs[-1], y, grad=True)
        for k in reversed(range(len(self.weights))):
            grad_w = de.matmul(inputs[k], grad, trans_a=True)
            grad_b = de.sum(grad, 0)
            if k > 0:
                grad_in = de.matmul(grad, self.weights[k], trans_b=True)
                # inputs[k] = relu(pre-activation): positive exactly where it was.
                grad = de.relu_grad(inputs[k], grad_in, out=grad_in)
            # Pushed after the product above that reads the old weights: the
            # engine orders this write behind that read.
            de.sgd_update(self.weights[k], grad_w, self.lr)
            de.sgd_update(self.biases[k], grad_b, self.lr)
        return loss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--device", default="cpu", choices=["cpu", "emulated"])
    parser.add_argument("--sync", action="store_true", help="read the loss after every step")
    parser.add_argument("--min-accuracy", type=float, default=0.0)
    args = parser.parse_args()

    engine = de.default_engine()
    device = "cpu"
    if args.device == "emulated":
        engine.add_emulated_device(0)
        device = "emulated:0"

    features, labels, source = load_digits()
    order = np.random.default_rng(1).permutation(len(labels))
    test_rows = round(0.2 * len(labels))
    train, test = order[:-test_rows], order[-test_rows:]
    print(f"data: {source}, {len(train)} train / {len(test)} test rows; device {device}")

    batches = [
        (de.array(features[train[i:i + args.batch]], device=device),
         de.array(labels[train[i:i + args.batch]], device=device))
        for i in range(0, len(train), args.batch)
    ]
    mlp = Mlp([64, args.hidden, 10], args.lr, device, engine)
    first = last = 0.0
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        total = de.zeros((), device=device)
        for x, y in batches:
            loss = mlp.train_step(x, y)
            if args.sync:
                loss.item()
            de.axpy(1.0 / len(batches), loss, total)
        last = float(total.item())  # the epoch's one blocker
        if epoch == 1:
            first = last
        print(f"epoch {epoch}: loss {last:.4f}")
    seconds = time.perf_counter() - start
    logits = mlp.forward(de.array(features[test], device=device)).asnumpy()
    accuracy = float((logits.argmax(1) == labels[test]).mean())
    print(f"test accuracy: {accuracy:.3f} ({seconds:.2f} s of training)")
    if args.epochs >= 2 and not last < first:
        print(f"the loss did not fall ({first:.4f} -> {last:.4f})", file=sys.stderr)
        return 1
    if accuracy < args.min_accuracy:
        print(f"accuracy {accuracy:.3f} is below {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
