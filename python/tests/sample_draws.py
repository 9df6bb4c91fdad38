"""util/rng.h's counter-based generator as it documents it, in Python: the draws of a sample's
own stream (pipeline/transform.h's SampleInput::rng), for tests that give torchvision the draws
stoker's operations made."""

MASK = 2**64 - 1
GOLDEN = 0x9E3779B97F4A7C15
SAMPLE_TAG = 0x73616D706C65  # "sample"


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def derive_stream(a, b):
    return mix64((mix64(a) + b) & MASK)


class SampleDraws:
    """The draws of step `step` of dataset index `index`'s stream in `epoch` under `seed` (the
    operation at that step of a field's pipeline, or of a joint transform, draws them)."""

    def __init__(self, seed, epoch, index, step):
        stream = derive_stream(derive_stream(SAMPLE_TAG, epoch), index)
        if step:
            stream = derive_stream(stream, step)
        self.key, self.counter = mix64(mix64(seed) ^ stream), 0

    def next_u64(self):
        self.counter += 1
        return mix64((self.key + self.counter * GOLDEN) & MASK)

    def next_double(self):
        return (self.next_u64() >> 11) * 2.0**-53

    def next_float(self):
        return (self.next_u64() >> 40) * 2.0**-24

    def uniform_below(self, n):
        """Lemire's multiply-shift with rejection (util/rng.h's uniform_below)."""
        m = self.next_u64() * n
        low = m & MASK
        if low < n:
            threshold = (2**64 - n) % n
            while low < threshold:
                m = self.next_u64() * n
                low = m & MASK
        return m >> 64
