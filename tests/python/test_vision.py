"""flotilla.vision: the C++ models reachable from Python and the
ImageNet-layout reader, on the handwritten-digits JPEGs that
scripts/make_digits_imagenet.sh writes."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import flotilla
from flotilla import errors, fluid
from flotilla.vision import ImageNetReader, models

from conftest import SOURCE_DIR


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The digits set at 32x32: 1,442 train and 355 val JPEGs, 10 classes."""
    out = tmp_path_factory.mktemp("vision") / "digits"
    done = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "make_digits_imagenet.sh"), str(out), "--size", "32"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, "scripts/make_digits_imagenet.sh failed (python3-sklearn, libturbojpeg0): " + \
        done.stderr
    return str(out)


def test_reader_batches_are_normalised_nchw_images_and_labels(digits):
    reader = ImageNetReader(digits, "train_list.txt", image_size=32, batch_size=16, lower_scale=0.6, seed=1)
    assert reader.size == 1442 and reader.num_classes == 10 and len(reader) == 1442 // 16
    batches = list(reader.epoch(0))
    assert len(batches) == len(reader)
    image, label = batches[0]
    assert image.shape == (16, 3, 32, 32) and image.dtype == np.float32 and image.flags.c_contiguous
    assert label.shape == (16, 1) and label.dtype == np.int64
    labels = np.concatenate([b[1] for b in batches]).ravel()
    assert labels.min() == 0 and labels.max() == 9
    assert -3 < image.mean() < 3 and image.std() > 0.3  # mean/std normalised, not raw bytes
    again = next(iter(ImageNetReader(digits, image_size=32, batch_size=16, lower_scale=0.6, seed=1).epoch(0)))
    np.testing.assert_array_equal(again[0], image)  # seeded augmentation: the same whatever the threads did
    assert not np.array_equal(next(iter(reader.epoch(1)))[1], label)  # a new order each epoch


def test_evaluation_shards_cover_every_image_once(digits):
    seen = 0
    labels = []
    for rank in range(2):
        val = ImageNetReader(digits, "val_list.txt", train=False, image_size=32, resize_short=32, batch_size=64,
                             rank=rank, nranks=2)
        for image, label in val.epoch(0):
            seen += len(image)
            labels.append(label)
    assert seen == 355
    assert np.bincount(np.concatenate(labels).ravel()).sum() == 355


def test_bad_images_are_skipped_or_named(digits, tmp_path):
    data = tmp_path / "bad"
    (data / "train").mkdir(parents=True)
    lines = []
    for i, line in enumerate(open(os.path.join(digits, "train_list.txt")).read().splitlines()[:5]):
        path, label = line.split()
        shutil.copy(os.path.join(digits, path), data / "train" / f"{i}.jpeg")
        lines.append(f"train/{i}.jpeg {label}")
    (data / "train" / "broken.jpeg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    lines.append("train/broken.jpeg 3")
    (data / "train_list.txt").write_text("\n".join(lines) + "\n")
    skipping = ImageNetReader(str(data), image_size=32, batch_size=6, shuffle=False, drop_last=False)
    (image, label), = list(skipping.epoch(0))
    assert len(image) == 5
    strict = ImageNetReader(str(data), image_size=32, batch_size=6, shuffle=False, drop_last=False,
                            skip_bad_images=False)
    with pytest.raises(errors.CorruptionError, match="broken.jpeg"):
        list(strict.epoch(0))
    (data / "train_list.txt").write_text("train/0.jpeg\n")
    with pytest.raises(errors.InvalidArgumentError, match="train_list.txt:1"):
        ImageNetReader(str(data))


def _trainable_count(build) -> int:
    main, startup = flotilla.Program(), flotilla.Program()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        build(fluid.layers.data(name="image", shape=[3, 224, 224], dtype="float32"))
    block = main.global_block()
    return sum(int(np.prod(p.shape)) for p in block.all_parameters() if not p.stop_gradient)


def test_models_are_the_cpp_networks_with_paddles_names():
    assert _trainable_count(lambda x: models.ResNet50().net(input=x, class_dim=1000)) == 25557032  # torchvision's
    assert _trainable_count(lambda x: models.get_model("resnet18").net(x, 1000)) > 11e6
    main, startup = flotilla.Program(), flotilla.Program()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        logits = models.ResNet(101).net(fluid.layers.data(name="image", shape=[3, 64, 64], dtype="float32"), 7)
    names = set(main.global_block().var_names())
    assert logits.shape == (-1, 7)
    assert {"conv1_weights", "bn_conv1_scale", "res4b22_branch2c_weights", "bn5c_branch2c_variance",
            "fc_0.w_0", "fc_0.b_0"} <= names
    with pytest.raises(errors.InvalidArgumentError, match="unknown model 'VGG16'.*ResNet50"):
        models.get_model("VGG16")
    assert "LeNet" in models.model_names() and isinstance(models.get_model("LeNet"), models.LeNet)


def test_default_mean_and_std_are_the_cpp_readers_bit_for_bit():
    from flotilla.vision import imagenet
    f32 = np.float32
    cpp_std = [f32(0.229) * f32(255), f32(0.224) * f32(255), f32(0.225) * f32(255)]  # 0.224f * 255 in C++
    cpp_mean = [f32(0.485) * f32(255), f32(0.456) * f32(255), f32(0.406) * f32(255)]
    assert [f32(v) for v in imagenet._IMAGENET_STD] == cpp_std
    assert [f32(v) for v in imagenet._IMAGENET_MEAN] == cpp_mean
    assert all(float(f32(v)) == v for v in imagenet._IMAGENET_STD + imagenet._IMAGENET_MEAN)  # no rounding on the way
    assert f32(0.224 * 255) != cpp_std[1]  # the product in double lands one ulp away
