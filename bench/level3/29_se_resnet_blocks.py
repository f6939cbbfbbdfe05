"""Two SE-ResNet bottleneck blocks: 1x1, 3x3, 1x1 convolutions with BatchNorm and ReLU, then squeeze-and-excitation
(global average pooling, a reducing and an expanding Linear, a sigmoid gate scaling each channel), the residual add
and ReLU; the first block projects its shortcut."""
import torch
import torch.nn as nn

BATCH, CHANNELS, SIZE, WIDTH, EXPANDED, REDUCTION = 64, 256, 28, 128, 512, 16


class SEBottleneck(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, WIDTH, 1, bias=False), nn.BatchNorm2d(WIDTH), nn.ReLU(),
            nn.Conv2d(WIDTH, WIDTH, 3, padding=1, bias=False), nn.BatchNorm2d(WIDTH), nn.ReLU(),
            nn.Conv2d(WIDTH, EXPANDED, 1, bias=False), nn.BatchNorm2d(EXPANDED))
        self.squeeze = nn.Linear(EXPANDED, EXPANDED // REDUCTION)
        self.excite = nn.Linear(EXPANDED // REDUCTION, EXPANDED)
        self.shortcut = (nn.Sequential(nn.Conv2d(cin, EXPANDED, 1, bias=False), nn.BatchNorm2d(EXPANDED))
                         if cin != EXPANDED else nn.Identity())

    def forward(self, x):
        y = self.body(x)
        s = torch.sigmoid(self.excite(torch.relu(self.squeeze(y.mean(dim=(2, 3))))))
        return torch.relu(y * s[:, :, None, None] + self.shortcut(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(SEBottleneck(CHANNELS), SEBottleneck(EXPANDED))

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return []
