"""Tests for GroupRMS: norm.py is compared with norm_ref.py (NumPy)."""
import unittest

import numpy as np

import norm
import norm_ref


def make_layer(c, g, alpha, eps, rng):
    layer = norm.GroupRMSNorm(c, g, alpha=alpha, eps=eps)
    layer.gamma = rng.normal(1.0, 0.3, size=c)
    layer.beta = rng.normal(0.0, 0.5, size=c)
    return layer


class TestGroupRMSNorm(unittest.TestCase):
    CASES = [((4, 6), 3, 0.5, 1e-5),
             ((2, 8, 3, 2), 4, 0.0, 1e-5),
             ((3, 6, 5), 2, 1.0, 1e-3),
             ((2, 4, 2, 3), 1, 0.3, 1e-5)]

    def test_default_parameters_are_identity_affine(self):
        layer = norm.GroupRMSNorm(6, 2)
        x = np.random.default_rng(10).normal(size=(3, 6))
        want = norm_ref.ref_forward(x, 2, np.ones(6), np.zeros(6), 0.5, 1e-5)
        np.testing.assert_allclose(layer.forward(x), want, rtol=1e-10, atol=1e-12)

    def test_forward_matches_reference(self):
        rng = np.random.default_rng(0)
        for shape, g, alpha, eps in self.CASES:
            layer = make_layer(shape[1], g, alpha, eps, rng)
            x = rng.normal(1.5, 2.0, size=shape)
            got = layer.forward(x)
            want = norm_ref.ref_forward(x, g, layer.gamma, layer.beta, alpha, eps)
            self.assertEqual(got.shape, x.shape)
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)

    def test_backward_matches_reference(self):
        rng = np.random.default_rng(1)
        for shape, g, alpha, eps in self.CASES:
            layer = make_layer(shape[1], g, alpha, eps, rng)
            x = rng.normal(-0.5, 1.5, size=shape)
            dy = rng.normal(size=shape)
            layer.forward(x)
            dx, dgamma, dbeta = layer.backward(dy)
            rdx, rdgamma, rdbeta = norm_ref.ref_backward(x, dy, g, layer.gamma, alpha, eps)
            self.assertEqual(dx.shape, x.shape)
            np.testing.assert_allclose(dx, rdx, rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(dgamma, rdgamma, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(dbeta, rdbeta, rtol=1e-10, atol=1e-12)

    def test_input_gradient_finite_differences(self):
        rng = np.random.default_rng(2)
        shape, g, alpha, eps = (2, 4, 3), 2, 0.7, 1e-5
        layer = make_layer(4, g, alpha, eps, rng)
        x = rng.normal(size=shape)
        w = rng.normal(size=shape)  # L = sum(w * y)
        layer.forward(x)
        dx, _, _ = layer.backward(w)
        h = 1e-6
        num = np.zeros_like(x)
        for idx in np.ndindex(*shape):
            xp, xm = x.copy(), x.copy()
            xp[idx] += h
            xm[idx] -= h
            num[idx] = (np.sum(w * layer.forward(xp)) - np.sum(w * layer.forward(xm))) / (2 * h)
        np.testing.assert_allclose(dx, num, rtol=1e-5, atol=1e-7)


if __name__ == '__main__':
    unittest.main()
