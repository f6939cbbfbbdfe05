"""ResNet-50-style bottleneck stages: a 7x7 stem and max pooling, then three stages of bottleneck blocks (1x1
reduce, 3x3, 1x1 expand by 4, BatchNorm and ReLU, a projected shortcut where the shape changes), global average
pooling and a classifier."""
import torch
import torch.nn as nn

BATCH = 16


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.stages = nn.Sequential(Bottleneck(64, 64, 1), Bottleneck(256, 64, 1),
                                    Bottleneck(256, 128, 2), Bottleneck(512, 128, 1),
                                    Bottleneck(512, 256, 2), Bottleneck(1024, 256, 1))
        self.fc = nn.Linear(1024, 1000)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def get_inputs():
    return [torch.randn(BATCH, 3, 224, 224)]


def get_init_inputs():
    return []
