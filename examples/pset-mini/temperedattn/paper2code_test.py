"""Tests for TemperedAttn: the annotated module is compared with attention_ref.py."""
import math
import random
import unittest

import attention
import attention_ref


def rand_matrix(rng, rows, cols, scale=1.0):
    return [[rng.gauss(0.0, scale) for _ in range(cols)] for _ in range(rows)]


class TestTemperedAttention(unittest.TestCase):
    def assert_matrix_close(self, got, want, tol=1e-9):
        self.assertEqual(len(got), len(want))
        for row_g, row_w in zip(got, want):
            self.assertEqual(len(row_g), len(row_w))
            for a, b in zip(row_g, row_w):
                self.assertTrue(math.isclose(a, b, rel_tol=tol, abs_tol=tol), (a, b))

    def test_length_scale(self):
        for n, n0 in [(1, 64), (10, 64), (64, 64), (100, 64), (4096, 64), (9, 3), (50, 4)]:
            got = attention.length_scale(n, n0)
            want = attention_ref.ref_length_scale(n, n0)
            self.assertTrue(math.isclose(got, want, rel_tol=1e-12), (n, n0, got, want))

    def test_sink_softmax_values(self):
        rng = random.Random(0)
        for trial in range(20):
            logits = [rng.gauss(0.0, 3.0) for _ in range(rng.randint(1, 9))]
            sink = rng.gauss(0.0, 2.0)
            got = attention.sink_softmax(logits, sink)
            want = attention_ref.ref_sink_softmax(logits, sink)
            self.assertEqual(len(got), len(want))
            for a, b in zip(got, want):
                self.assertAlmostEqual(a, b, places=12)
            self.assertLess(sum(got), 1.0)

    def test_sink_softmax_large_logits(self):
        got = attention.sink_softmax([1000.0, 999.0, -5.0], 998.0)
        want = attention_ref.ref_sink_softmax([1000.0, 999.0, -5.0], 998.0)
        for a, b in zip(got, want):
            self.assertAlmostEqual(a, b, places=12)

    def test_sink_softmax_dominant_sink(self):
        # the shift must include the sink logit, or exp(b - max(logits)) overflows
        got = attention.sink_softmax([-800.0, -790.0], 10.0)
        want = attention_ref.ref_sink_softmax([-800.0, -790.0], 10.0)
        for a, b in zip(got, want):
            self.assertAlmostEqual(a, b, places=12)

    def test_bidirectional_long_context(self):
        rng = random.Random(1)
        q, k, v = rand_matrix(rng, 3, 4), rand_matrix(rng, 20, 4), rand_matrix(rng, 20, 2)
        layer = attention.TemperedAttention(n0=4, sink_logit=0.3)
        got = layer(q, k, v)
        want = attention_ref.ref_attention(q, k, v, n0=4, sink_logit=0.3)
        self.assert_matrix_close(got, want)

    def test_causal_with_prefix(self):
        rng = random.Random(2)
        q, k, v = rand_matrix(rng, 5, 6), rand_matrix(rng, 9, 6), rand_matrix(rng, 9, 3)
        layer = attention.TemperedAttention(n0=3, sink_logit=-0.5, causal=True)
        got = layer(q, k, v)
        want = attention_ref.ref_attention(q, k, v, n0=3, sink_logit=-0.5, causal=True)
        self.assert_matrix_close(got, want)

    def test_short_context_default_settings(self):
        rng = random.Random(3)
        q, k, v = rand_matrix(rng, 2, 8, 2.0), rand_matrix(rng, 5, 8, 2.0), rand_matrix(rng, 5, 4)
        got = attention.TemperedAttention()(q, k, v)
        want = attention_ref.ref_attention(q, k, v)
        self.assert_matrix_close(got, want)


if __name__ == '__main__':
    unittest.main()
