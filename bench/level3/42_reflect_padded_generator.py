"""An image-to-image generator in the style of style-transfer networks: reflect-padded convolutions (padding_mode
'reflect'), InstanceNorm with affine weights and ReLU, a strided downsampling convolution, three residual blocks of
two reflect-padded 3x3 convolutions, a transposed convolution back up and a tanh output."""
import torch
import torch.nn as nn

BATCH, SIZE, WIDTH, BLOCKS = 8, 128, 64, 3


def conv_norm_relu(c_in, c_out, kernel, stride=1):
    return [nn.Conv2d(c_in, c_out, kernel, stride, padding=kernel // 2, padding_mode="reflect"),
            nn.InstanceNorm2d(c_out, affine=True), nn.ReLU()]


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(*conv_norm_relu(c, c, 3),
                                  nn.Conv2d(c, c, 3, padding=1, padding_mode="reflect"), nn.InstanceNorm2d(c, affine=True))

    def forward(self, x):
        return x + self.body(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            *conv_norm_relu(3, WIDTH, 7), *conv_norm_relu(WIDTH, 2 * WIDTH, 3, stride=2),
            *(Residual(2 * WIDTH) for _ in range(BLOCKS)),
            nn.ConvTranspose2d(2 * WIDTH, WIDTH, 3, stride=2, padding=1, output_padding=1),
            nn.InstanceNorm2d(WIDTH, affine=True), nn.ReLU(),
            nn.Conv2d(WIDTH, 3, 7, padding=3, padding_mode="reflect"), nn.Tanh())

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(BATCH, 3, SIZE, SIZE)]


def get_init_inputs():
    return []
