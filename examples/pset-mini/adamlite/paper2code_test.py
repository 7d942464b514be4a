"""Tests for AdaMLite: optim.py and schedule.py are compared with their _ref modules."""
import math
import random
import unittest

import optim
import optim_ref
import schedule
import schedule_ref


def quadratic_grads(params, targets, curvature):
    # gradient of 0.5 * sum_i c_i (x_i - t_i)^2, per tensor
    return [[c * (x - t) for x, t, c in zip(p, tp, cp)]
            for p, tp, cp in zip(params, targets, curvature)]


def make_problem(seed, shapes, grad_scale=1.0):
    rng = random.Random(seed)
    params = [[rng.gauss(0.0, 1.0) for _ in range(n)] for n in shapes]
    targets = [[rng.gauss(0.0, 1.0) for _ in range(n)] for n in shapes]
    curvature = [[grad_scale * rng.uniform(0.5, 3.0) for _ in range(n)] for n in shapes]
    return params, targets, curvature


class TestAdaMLite(unittest.TestCase):
    def assert_params_close(self, got, want, tol=1e-10):
        self.assertEqual([len(p) for p in got], [len(p) for p in want])
        for pg, pw in zip(got, want):
            for a, b in zip(pg, pw):
                self.assertTrue(math.isclose(a, b, rel_tol=tol, abs_tol=tol), (a, b))

    def run_both(self, seed, shapes, steps, grad_scale=1.0, lr_fn=None, **kw):
        params, targets, curvature = make_problem(seed, shapes, grad_scale)
        opt = optim.AdaMLite(params, lr=kw.get("lr", 1e-2), betas=kw.get("betas", (0.9, 0.999)),
                             eps=kw.get("eps", 1e-8), weight_decay=kw.get("weight_decay", 0.0),
                             max_grad_norm=kw.get("max_grad_norm"))
        ref_params = [list(p) for p in params]
        state = optim_ref.ref_init_state(ref_params)
        for s in range(steps):
            lr = kw.get("lr", 1e-2) if lr_fn is None else lr_fn(s)
            grads = quadratic_grads(opt.params, targets, curvature)
            ref_grads = quadratic_grads(ref_params, targets, curvature)
            opt.step(grads, lr=None if lr_fn is None else lr)
            ref_params = optim_ref.ref_step(
                ref_params, ref_grads, state, lr, betas=kw.get("betas", (0.9, 0.999)),
                eps=kw.get("eps", 1e-8), weight_decay=kw.get("weight_decay", 0.0),
                max_grad_norm=kw.get("max_grad_norm"))
            self.assert_params_close(opt.params, ref_params)
        return opt

    def test_initial_state(self):
        opt = optim.AdaMLite([[1.0, 2.0], [3.0]])
        self.assertEqual(opt.t, 0)
        self.assertEqual(opt.m, [[0.0, 0.0], [0.0]])
        self.assertEqual(opt.v, [[0.0, 0.0], [0.0]])

    def test_plain_adam_steps(self):
        opt = self.run_both(0, [3, 5], steps=12, betas=(0.8, 0.95))
        self.assertEqual(opt.t, 12)

    def test_weight_decay(self):
        self.run_both(1, [4, 2], steps=10, weight_decay=0.1, lr=0.05)

    def test_clipping_is_active(self):
        # gradients are large, so the threshold of 0.5 clips every step
        self.run_both(2, [6, 3], steps=8, grad_scale=20.0, max_grad_norm=0.5,
                      betas=(0.5, 0.6), eps=1e-3)

    def test_clipping_threshold_not_reached(self):
        self.run_both(3, [2], steps=5, grad_scale=0.01, max_grad_norm=100.0)

    def test_with_schedule(self):
        lr_fn = lambda s: schedule.warmup_cosine(s, total_steps=15, warmup_steps=4,
                                                 peak_lr=0.1, min_lr=0.01)
        self.run_both(4, [5, 1, 3], steps=15, lr_fn=lr_fn, weight_decay=0.01, max_grad_norm=2.0)


class TestWarmupCosine(unittest.TestCase):
    def check(self, total, warmup, peak, floor):
        for s in range(total + 5):
            got = schedule.warmup_cosine(s, total, warmup, peak, floor)
            want = schedule_ref.ref_warmup_cosine(s, total, warmup, peak, floor)
            self.assertTrue(math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15), (s, got, want))

    def test_warmup_then_cosine(self):
        self.check(total=20, warmup=5, peak=3e-3, floor=1e-4)

    def test_no_warmup_zero_floor(self):
        self.check(total=10, warmup=0, peak=1.0, floor=0.0)

    def test_all_warmup(self):
        self.check(total=6, warmup=6, peak=0.5, floor=0.05)


if __name__ == '__main__':
    unittest.main()
