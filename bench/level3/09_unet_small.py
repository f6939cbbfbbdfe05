"""A small U-Net: two downsampling stages (double 3x3 conv with BatchNorm and ReLU, max pooling), a bottleneck, and
two upsampling stages (a transposed convolution, the skip connection concatenated, a double conv), then a 1x1 head."""
import torch
import torch.nn as nn

BATCH = 24


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Model(nn.Module):
    def __init__(self, cin, classes, width):
        super().__init__()
        self.down1 = double_conv(cin, width)
        self.down2 = double_conv(width, 2 * width)
        self.bottom = double_conv(2 * width, 4 * width)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(4 * width, 2 * width, 2, stride=2)
        self.dec2 = double_conv(4 * width, 2 * width)
        self.up1 = nn.ConvTranspose2d(2 * width, width, 2, stride=2)
        self.dec1 = double_conv(2 * width, width)
        self.head = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(self.pool(d1))
        b = self.bottom(self.pool(d2))
        u2 = self.dec2(torch.cat([self.up2(b), d2], 1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], 1))
        return self.head(u1)


def get_inputs():
    return [torch.randn(BATCH, 3, 128, 128)]


def get_init_inputs():
    return [3, 4, 32]
