"""tf.data (tensorflow-cpu): `tf.io.decode_and_crop_jpeg` decodes only the random crop's region
(the window drawn by `tf.image.sample_distorted_bounding_box`, as TF's ImageNet input pipelines
do), `tf.image.resize` (bilinear with antialias), a random flip; parallel map, batch and
prefetch on a private thread pool of `cores` threads; each batch handed to torch through DLPack.
Files that are not JPEGs (a PNG named .jpg) go through `tf.io.decode_image`."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
import torch  # noqa: E402

import work  # noqa: E402
from peer_torchvision_pil import prepare  # noqa: F401,E402  (reads the original files)


def _window(shape, seed):
    """(begin, size) of a RandomResizedCrop window of an image of `shape`."""
    begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
        shape, bounding_boxes=tf.constant([[[0.0, 0.0, 1.0, 1.0]]]), seed=seed,
        area_range=work.SCALE, aspect_ratio_range=work.RATIO, max_attempts=10,
        use_image_if_no_bounding_boxes=True, min_object_covered=0.0)
    return begin, size


def _random_crop(data, seed):
    begin, size = _window(tf.image.extract_jpeg_shape(data), seed)
    return tf.io.decode_and_crop_jpeg(data, tf.stack([begin[0], begin[1], size[0], size[1]]),
                                      channels=3)


def _whole_then_crop(data, seed):
    image = _decode(data)
    begin, size = _window(tf.shape(image), seed)
    return tf.slice(image, begin, size)


def _decode(data):
    return tf.io.decode_image(data, channels=3, expand_animations=False)


def _train_map(dtype):
    def load(path, label, seed):
        data = tf.io.read_file(path)
        image = tf.cond(tf.io.is_jpeg(data), lambda: _random_crop(data, seed),
                        lambda: _whole_then_crop(data, seed))
        image = tf.image.resize(image, (work.SIZE, work.SIZE), antialias=True)
        image = tf.image.stateless_random_flip_left_right(image, seed + 1)
        if dtype == "uint8":
            image = tf.cast(tf.round(tf.clip_by_value(image, 0, 255)), tf.uint8)
        else:
            image = (image / 255.0 - work.MEAN) / work.STD
        return tf.transpose(image, (2, 0, 1)), label
    return load


def _options(cores):
    options = tf.data.Options()
    options.threading.private_threadpool_size = cores
    return options


def batches(store, cores, dtype, seed):
    files = work.read_file_list(store)
    ds = tf.data.Dataset.from_tensor_slices(([p for p, _ in files], [lb for _, lb in files]))
    ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    seeds = tf.data.Dataset.random(seed=seed).batch(2)
    ds = tf.data.Dataset.zip((ds, seeds)).map(lambda f, s: (f[0], f[1], s))
    ds = ds.map(_train_map(dtype), num_parallel_calls=cores).batch(work.BATCH)
    ds = ds.prefetch(tf.data.AUTOTUNE).with_options(_options(cores))
    for images, labels in ds:
        yield torch.from_dlpack(tf.experimental.dlpack.to_dlpack(images)), \
            torch.from_numpy(labels.numpy())


def eval_image(path):
    image = _decode(tf.io.read_file(path))
    width, height = work.eval_size(image.shape[1], image.shape[0])
    image = tf.image.resize(image, (height, width), antialias=True)
    image = tf.image.resize_with_crop_or_pad(image, work.SIZE, work.SIZE)
    image = tf.cast(tf.round(tf.clip_by_value(image, 0, 255)), tf.uint8)
    return torch.from_numpy(tf.transpose(image, (2, 0, 1)).numpy())
