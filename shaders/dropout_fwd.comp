#version 450
/* dropout_fwd.comp — DBK_OP_DROPOUT_FWD: shaders/common/dropout.glsl on x. */
#include "common/dropout.glsl"
