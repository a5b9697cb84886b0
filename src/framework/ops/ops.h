// One registration function per op family; RegisterAllOps() calls them all.
// Each lives in ops/<family>_ops.cc.
#pragma once

namespace flotilla::ops {

void RegisterBasicOps();        // fill_constant(_batch_size_like), sum, assign, fill_zeros_like
void RegisterMathOps();         // mul, matmul
void RegisterElementwiseOps();  // elementwise_add/sub/mul/div/max/min, less_than, ...
void RegisterActivationOps();   // relu, tanh, sigmoid, square, softsign, scale
void RegisterReduceOps();       // mean, reduce_sum, reduce_mean
void RegisterTensorOps();       // concat, reshape, cast, uniform_random, gaussian_random
void RegisterSoftmaxOps();      // softmax, softmax_with_cross_entropy
void RegisterLossOps();         // cross_entropy, sigmoid_cross_entropy_with_logits
void RegisterLookupTableOps();  // lookup_table (dense and sparse gradient)
void RegisterMetricOps();       // accuracy, auc
void RegisterOptimizerOps();    // sgd, momentum, adam, adagrad
void RegisterLearningRateOps(); // increment, lr_schedule
void RegisterConvOps();         // conv2d, depthwise_conv2d, conv2d_transpose
void RegisterPoolOps();         // pool2d (max/avg, global, adaptive)
void RegisterBatchNormOps();    // batch_norm
void RegisterNormOps();         // layer_norm, group_norm
void RegisterDropoutOps();      // dropout
void RegisterLayoutOps();       // flatten, transpose, pad2d, nearest/bilinear_interp
void RegisterLabelOps();        // one_hot, label_smooth
void RegisterSequenceOps();     // sequence_pool, _softmax, _reverse, _expand, _expand_as
void RegisterSequencePadOps();  // sequence_pad, _unpad, _mask, _enumerate
void RegisterSequenceConvOps(); // sequence_conv, _concat, _reshape, _slice
void RegisterSimilarityOps();   // cos_sim
void RegisterLoDOps();          // lod_reset (and lod_append through its append attribute)

}  // namespace flotilla::ops
