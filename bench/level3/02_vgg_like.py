"""A VGG-style network: five stages of 3x3 convolutions with ReLU, each ending in 2x2 max pooling, then three
fully connected layers with ReLU and dropout (the identity, as the judge takes dropout)."""
import torch
import torch.nn as nn

BATCH = 8


class Model(nn.Module):
    def __init__(self, classes):
        super().__init__()
        layers, cin = [], 3
        for width, convs in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
            for _ in range(convs):
                layers += [nn.Conv2d(cin, width, 3, padding=1), nn.ReLU(inplace=True)]
                cin = width
            layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(512 * 7 * 7, 1024), nn.ReLU(inplace=True), nn.Dropout(0.5),
                                        nn.Linear(1024, 1024), nn.ReLU(inplace=True), nn.Dropout(0.5),
                                        nn.Linear(1024, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def get_inputs():
    return [torch.randn(BATCH, 3, 224, 224)]


def get_init_inputs():
    return [1000]
