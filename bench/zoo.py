"""The model-zoo sweep: pooling configurations as real models run them, named after their family.

Shapes are those the models produce at their usual input sizes (batch 1 inference unless the
name says otherwise): ResNet/VGG stems and stages, GoogLeNet/SqueezeNet/MTCNN `ceil_mode` pools,
Inception stride-1 pools on small planes, YOLO SPPF/SPP, CenterNet's heatmap NMS, global
windows, dilated and asymmetric pools, S3D/C3D 3-D pools, 1-D sequence pools, the other dtypes,
channels-last, Indices, and MaxUnpool/Col2Im from SegNet/ENet and VOLO/overlap-add models.

Every case runs its peers both at `cases.THREADS` threads and at one thread (members
"onnxruntime 1 thread", "torch 1 thread"), so the report can compare pooling with the best peer
at each thread count:  python bench/report.py -k zoo
"""
from cases import Case


def _pool(family, shape, k, s=1, p=0, dtype="float32", ceil=False, d=1, indices=False,
          layout="NCHW", pads=None):
    n = len(shape) - 2
    tup = (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * n)
    attrs = [("kernel_shape", tup(k)), ("strides", tup(s))]
    if pads is not None:
        attrs.append(("pads", tuple(pads)))
    elif p:
        attrs.append(("pads", tup(p) * 2))
    if d != 1:
        attrs.append(("dilations", tup(d)))
    if ceil:
        attrs.append(("ceil_mode", 1))
    return Case("MaxPool", shape, dtype, tuple(attrs), indices, layout, family=family)


def _global(family, shape, dtype="float32"):
    return _pool(family, shape, shape[2:], shape[2:], dtype=dtype)


ZOO = [
    # ResNet / VGG
    _pool("ResNet stem", (1, 64, 112, 112), 3, 2, 1),
    _pool("ResNet stem b16", (16, 64, 112, 112), 3, 2, 1),
    _pool("VGG pool1", (1, 64, 224, 224), 2, 2),
    _pool("VGG pool3 b8", (8, 256, 56, 56), 2, 2),
    _pool("VGG pool5", (1, 512, 14, 14), 2, 2),
    # ceil_mode
    _pool("GoogLeNet pool1", (1, 64, 112, 112), 3, 2, ceil=True),
    _pool("GoogLeNet pool3", (1, 480, 28, 28), 3, 2, ceil=True),
    _pool("SqueezeNet pool1", (1, 96, 109, 109), 3, 2, ceil=True),
    _pool("MTCNN P-Net", (1, 10, 148, 198), 2, 2, ceil=True),
    _pool("MTCNN O-Net b16", (16, 32, 46, 46), 3, 2, ceil=True),
    # Inception stride-1 pools on small planes
    _pool("Inception 3a pool branch", (1, 192, 28, 28), 3, 1, 1),
    _pool("Inception-v3 35x35 branch", (1, 288, 35, 35), 3, 1, 1),
    _pool("Inception 5b pool branch", (1, 832, 7, 7), 3, 1, 1),
    # YOLO SPPF (k5 s1 p2, chained three times in the model) and SPP (k5/k9/k13)
    _pool("YOLOv5s SPPF", (1, 256, 20, 20), 5, 1, 2),
    _pool("YOLOv5l SPPF", (1, 512, 20, 20), 5, 1, 2),
    _pool("YOLOv5s SPPF 1280", (1, 256, 40, 40), 5, 1, 2),
    _pool("YOLOv5s SPPF b8", (8, 256, 20, 20), 5, 1, 2),
    _pool("YOLOv3 SPP k5", (1, 512, 19, 19), 5, 1, 2),
    _pool("YOLOv3 SPP k9", (1, 512, 19, 19), 9, 1, 4),
    _pool("YOLOv3 SPP k13", (1, 512, 19, 19), 13, 1, 6),
    _pool("YOLOv3 SPP k13 416", (1, 512, 13, 13), 13, 1, 6),
    _pool("YOLOv3-tiny k2 s1", (1, 512, 13, 13), 2, 1, pads=(0, 0, 1, 1)),
    # CenterNet: k3 s1 NMS on the class heatmaps
    _pool("CenterNet heatmap NMS", (1, 80, 128, 128), 3, 1, 1),
    _pool("CenterNet heatmap NMS b8", (8, 80, 128, 128), 3, 1, 1),
    # global windows
    _global("ResNet-50 global max", (1, 2048, 7, 7)),
    _global("global max b8", (8, 512, 7, 7)),
    _global("global max 14x14", (1, 1024, 14, 14)),
    # dilated, k2 s1, k4 s4
    _pool("dilated k3 d2", (1, 64, 56, 56), 3, 1, 2, d=2),
    _pool("k2 s1 smoothing", (1, 128, 64, 64), 2, 1),
    _pool("k4 s4 downsample", (1, 64, 128, 128), 4, 4),
    # 3-D
    _pool("C3D pool1", (1, 64, 16, 112, 112), (1, 2, 2), (1, 2, 2)),
    _pool("C3D pool2", (1, 128, 16, 56, 56), 2, 2),
    _pool("S3D stem pool", (1, 64, 16, 112, 112), (1, 3, 3), (1, 2, 2), (0, 1, 1)),
    _pool("S3D branch pool", (1, 192, 16, 28, 28), 3, 1, 1),
    _pool("S3D late branch pool", (1, 832, 2, 7, 7), 3, 1, 1),  # the last blocks' 2x7x7 slices: a small call
    _pool("3-D k2 s2 b2", (2, 16, 32, 48, 48), 2, 2),
    # 1-D
    _pool("speech 1-D k3 s2", (8, 128, 4000), 3, 2, 1),
    _pool("sequence 1-D k2 s2", (16, 256, 1024), 2, 2),
    _pool("sequence 1-D k5 s1", (8, 256, 1000), 5, 1, 2),
    # other dtypes
    _pool("ResNet stem float16", (1, 64, 112, 112), 3, 2, 1, "float16"),
    _pool("ResNet stem bfloat16", (1, 64, 112, 112), 3, 2, 1, "bfloat16"),
    _pool("ResNet stem float64", (1, 64, 112, 112), 3, 2, 1, "float64"),
    _pool("ResNet stem uint8 (quantized)", (1, 64, 112, 112), 3, 2, 1, "uint8"),
    _pool("YOLOv5s SPPF float16 1280", (1, 256, 40, 40), 5, 1, 2, "float16"),
    _pool("YOLOv5s SPPF int8", (1, 256, 20, 20), 5, 1, 2, "int8"),
    _pool("VGG pool1 uint8", (1, 64, 224, 224), 2, 2, dtype="uint8"),
    # channels-last
    _pool("ResNet stem NHWC", (1, 112, 112, 64), 3, 2, 1, layout="NHWC"),
    _pool("YOLOv5s SPPF NHWC b8", (8, 40, 40, 256), 5, 1, 2, layout="NHWC"),
    _pool("Inception 5b pool NHWC", (1, 7, 7, 832), 3, 1, 1, layout="NHWC"),
    # with Indices (for MaxUnpool)
    _pool("SegNet pool1 +Indices", (1, 64, 360, 480), 2, 2, indices=True),
    _pool("ENet initial +Indices", (1, 16, 256, 256), 2, 2, indices=True),
    _pool("VGG-style NHWC +Indices b4", (4, 112, 112, 64), 2, 2, indices=True, layout="NHWC"),  # for MaxUnpool
    # MaxUnpool (X is the k2 s2 pool of an input twice its size) and Col2Im
    Case("MaxUnpool", (1, 64, 180, 240), "float32", (("kernel_shape", (2, 2)), ("strides", (2, 2))),
         family="SegNet unpool1"),
    Case("MaxUnpool", (1, 16, 128, 128), "float32", (("kernel_shape", (2, 2)), ("strides", (2, 2))),
         family="ENet unpool"),
    Case("Col2Im", (1, 1728, 784), "float32", (("pads", (1, 1, 1, 1)),), image=(28, 28), block=(3, 3),
         family="VOLO outlooker fold"),
    # VOLO-D1's outlooker folds at stride 2 (14x14 blocks of 3x3 into 28x28), at batch 1 and 16
    Case("Col2Im", (1, 1728, 196), "float32", (("strides", (2, 2)), ("pads", (1, 1, 1, 1))), image=(28, 28),
         block=(3, 3), family="VOLO-D1 fold k3 s2"),
    Case("Col2Im", (4, 1728, 196), "float32", (("strides", (2, 2)), ("pads", (1, 1, 1, 1))), image=(28, 28),
         block=(3, 3), family="VOLO-D1 fold k3 s2 b4"),
    Case("Col2Im", (16, 1728, 196), "float32", (("strides", (2, 2)), ("pads", (1, 1, 1, 1))), image=(28, 28),
         block=(3, 3), family="VOLO-D1 fold k3 s2 b16"),
    # ... and in float16 (the 16-bit floats' conversions, F16C in the AVX builds) and bfloat16 (which
    # onnxruntime does not fold: torch is the peer)
    Case("Col2Im", (1, 1728, 196), "float16", (("strides", (2, 2)), ("pads", (1, 1, 1, 1))), image=(28, 28),
         block=(3, 3), family="VOLO-D1 fold k3 s2 float16"),
    Case("Col2Im", (1, 1728, 196), "bfloat16", (("strides", (2, 2)), ("pads", (1, 1, 1, 1))), image=(28, 28),
         block=(3, 3), family="VOLO-D1 fold k3 s2 bfloat16"),
    # MAE's unpatchify (16x16 patches of 3 channels back into 224x224 images): blocks that do not overlap
    Case("Col2Im", (8, 768, 196), "float32", (("strides", (16, 16)),), image=(224, 224), block=(16, 16),
         family="MAE unpatchify k16 s16 b8"),
    Case("Col2Im", (4, 512, 250), "float32", (("strides", (1, 128)),), image=(1, 32384), block=(1, 512),
         family="overlap-add 1-D"),
]
