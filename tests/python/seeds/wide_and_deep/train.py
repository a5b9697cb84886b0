# Seed 004's train.py (wide&deep, parameter servers, Paddle 2.x fleet) as
# written; the strategy comes from --mode (sync, async, geo) as in the
# seed's three variants, and the lines the seed elides are PaddleFleetX's.
import argparse
import os

import numpy as np
import paddle
import paddle.distributed.fleet as fleet
import paddle.distributed.fleet.base.role_maker as role_maker

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="async", choices=["sync", "async", "geo"])
args = parser.parse_args()

# 当前参数服务器模式只支持静态图模式, 因此训练前必须指定`paddle.enable_static()`
paddle.enable_static()
role = role_maker.PaddleCloudRoleMaker()
fleet.init(role)

# 模型定义参考examples/wide_and_deep中model.py
from model import net
from reader import data_reader

feeds, predict, avg_cost, auc = net()

reader = paddle.io.DataLoader.from_generator(feed_list=feeds, capacity=64, iterable=False)
train_reader = paddle.batch(data_reader(), batch_size=4)
reader.decorate_sample_list_generator(train_reader)

if args.mode == "async":
    # 定义异步训练
    dist_strategy = fleet.DistributedStrategy()
    dist_strategy.a_sync = True
elif args.mode == "sync":
    # 定义同步训练
    dist_strategy = fleet.DistributedStrategy()
    dist_strategy.a_sync = False
else:
    # 定义Geo异步训练, Geo异步目前只支持SGD优化算法
    dist_strategy = fleet.DistributedStrategy()
    dist_strategy.a_sync = True
    dist_strategy.a_sync_configs = {"k_steps": 100}

optimizer = paddle.optimizer.SGD(learning_rate=0.0001)
optimizer = fleet.distributed_optimizer(optimizer, dist_strategy)
optimizer.minimize(avg_cost)

if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())

    fleet.init_worker()

    for epoch_id in range(1):
        reader.start()
        try:
            while True:
                loss_val, auc_val = exe.run(program=paddle.static.default_main_program(),
                                            fetch_list=[avg_cost.name, auc.name])
                loss_val = np.mean(loss_val)
                print("TRAIN ---> pass: {} loss: {} auc: {}\n".format(epoch_id, loss_val, np.mean(auc_val)))
        except paddle.core.EOFException:
            reader.reset()

    fleet.stop_worker()
