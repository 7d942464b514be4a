import unittest

import torch

from gated import GatedNormBlock, rms_norm, swiglu
from gated_ref import GatedNormBlock as GatedNormBlockRef
from gated_ref import rms_norm as rms_norm_ref
from gated_ref import swiglu as swiglu_ref


class TestGatedNorm(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.x = torch.randn(4, 7, 16)

    def test_rms_norm_matches_reference(self):
        weight = torch.rand(16) + 0.5
        torch.testing.assert_close(rms_norm(self.x, weight), rms_norm_ref(self.x, weight))

    def test_rms_norm_unit_rms(self):
        y = rms_norm(self.x, torch.ones(16))
        torch.testing.assert_close(y.pow(2).mean(-1), torch.ones(4, 7), atol=1e-4, rtol=1e-4)

    def test_swiglu_matches_reference(self):
        w_gate, w_up = torch.randn(16, 24), torch.randn(16, 24)
        torch.testing.assert_close(swiglu(self.x, w_gate, w_up), swiglu_ref(self.x, w_gate, w_up))

    def test_block_forward_and_gradients(self):
        torch.manual_seed(1)
        block = GatedNormBlock(16, 32)
        torch.manual_seed(1)
        ref = GatedNormBlockRef(16, 32)
        x = self.x.clone().requires_grad_(True)
        x_ref = self.x.clone().requires_grad_(True)
        out, out_ref = block(x), ref(x_ref)
        torch.testing.assert_close(out, out_ref)
        out.square().sum().backward()
        out_ref.square().sum().backward()
        torch.testing.assert_close(x.grad, x_ref.grad)
        torch.testing.assert_close(block.w_down.grad, ref.w_down.grad)


if __name__ == "__main__":
    unittest.main()
