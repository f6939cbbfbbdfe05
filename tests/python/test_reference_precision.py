"""References are exact float32 (kforge.bridge.exact_fp32), whatever PyTorch's TF32 defaults say."""


def test_references_are_computed_without_tf32_and_the_defaults_come_back():
    import torch

    from kforge.bridge import exact_fp32
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = True  # PyTorch's default for convolutions
    try:
        with exact_fp32():
            assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
        assert torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
