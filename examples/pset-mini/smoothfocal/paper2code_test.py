"""Tests for SmoothFocal: loss.py is compared with loss_ref.py."""
import math
import random
import unittest

import loss
import loss_ref


def close(a, b, tol=1e-10):
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


class TestSmoothFocal(unittest.TestCase):
    def setUp(self):
        rng = random.Random(7)
        self.k = 6
        self.batch = [[rng.gauss(0.0, 2.5) for _ in range(self.k)] for _ in range(10)]
        self.targets = [rng.randrange(self.k) for _ in range(10)]

    def test_log_softmax(self):
        for z in self.batch + [[1000.0, 0.0, -1000.0]]:
            got = loss.log_softmax(z)
            want = loss_ref.ref_log_probs(z)
            self.assertTrue(all(close(a, b) for a, b in zip(got, want)), (got, want))

    def test_smoothed_targets(self):
        for y, k, eps in [(0, 4, 0.1), (3, 4, 0.0), (2, 5, 0.3)]:
            got = loss.smoothed_targets(y, k, eps)
            want = loss_ref.ref_targets(y, k, eps)
            self.assertEqual(len(got), k)
            self.assertTrue(all(close(a, b) for a, b in zip(got, want)), (got, want))

    def test_per_example_loss(self):
        for eps, gamma in [(0.1, 2.0), (0.0, 0.0), (0.25, 1.5), (0.05, 0.0)]:
            for z, y in zip(self.batch, self.targets):
                got = loss.focal_smooth_ce(z, y, eps, gamma)
                want = loss_ref.ref_loss(z, y, eps, gamma)
                self.assertTrue(close(got, want), (eps, gamma, got, want))

    def test_default_hyperparameters(self):
        z, y = self.batch[0], self.targets[0]
        self.assertTrue(close(loss.focal_smooth_ce(z, y), loss_ref.ref_loss(z, y, 0.1, 2.0)))

    def test_batch_unweighted(self):
        got = loss.batch_loss(self.batch, self.targets, 0.1, 2.0)
        want = loss_ref.ref_batch_loss(self.batch, self.targets, 0.1, 2.0)
        self.assertTrue(close(got, want), (got, want))

    def test_batch_weighted_with_padding(self):
        targets = list(self.targets)
        targets[1] = targets[4] = targets[8] = -100
        weights = [0.5, 2.0, 1.0, 3.0, 0.25, 1.5]
        got = loss.batch_loss(self.batch, targets, 0.2, 1.0, class_weights=weights)
        want = loss_ref.ref_batch_loss(self.batch, targets, 0.2, 1.0, weights=weights)
        self.assertTrue(close(got, want), (got, want))
        got = loss.batch_loss(self.batch, targets, 0.2, 1.0)
        want = loss_ref.ref_batch_loss(self.batch, targets, 0.2, 1.0)
        self.assertTrue(close(got, want), (got, want))

    def test_batch_all_padding(self):
        self.assertEqual(loss.batch_loss(self.batch[:3], [-100, -100, -100]), 0.0)

    def test_gradient(self):
        for z, y in zip(self.batch, self.targets):
            got = loss.smoothed_ce_grad(z, y, 0.15)
            want = loss_ref.ref_grad(z, y, 0.15)
            self.assertTrue(all(close(a, b) for a, b in zip(got, want)), (got, want))


if __name__ == '__main__':
    unittest.main()
