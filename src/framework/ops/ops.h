// One registration function per op family; RegisterAllOps() calls them all.
// Each lives in ops/<family>_ops.cc.
#pragma once

namespace flotilla::ops {

void RegisterBasicOps();        // fill_constant, sum, assign, fill_zeros_like
void RegisterMathOps();         // mul, matmul
void RegisterElementwiseOps();  // elementwise_add/sub/mul/div
void RegisterActivationOps();   // relu, tanh, sigmoid, square, scale
void RegisterReduceOps();       // mean, reduce_sum, reduce_mean
void RegisterTensorOps();       // concat, reshape, cast, uniform_random, gaussian_random
void RegisterSoftmaxOps();      // softmax, softmax_with_cross_entropy
void RegisterLossOps();         // cross_entropy, sigmoid_cross_entropy_with_logits
void RegisterLookupTableOps();  // lookup_table (dense and sparse gradient)
void RegisterMetricOps();       // accuracy, auc
void RegisterOptimizerOps();    // sgd, momentum, adam, adagrad
void RegisterLearningRateOps(); // increment, lr_schedule

}  // namespace flotilla::ops
