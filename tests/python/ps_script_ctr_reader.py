"""The pipe command of ps_script_ctr.py's dataset mode: CTR text lines
(scripts/make_ctr_data.py) on stdin to MultiSlot samples (slots a, b,
click) on stdout, through Paddle's MultiSlotDataGenerator."""

import paddle.distributed.fleet as fleet


class CtrReader(fleet.MultiSlotDataGenerator):
    """Deep ids to slot a, wide ids (id:1) to slot b, the click."""

    def generate_sample(self, line):
        def samples():
            dnn, lr, click = line.rstrip("\n").split("\t")
            yield ("a", [int(i) for i in dnn.split()]), ("b", [int(i.split(":")[0]) for i in lr.split()]), \
                ("click", [int(click)])
        return samples


if __name__ == "__main__":
    CtrReader().run_from_stdin()
