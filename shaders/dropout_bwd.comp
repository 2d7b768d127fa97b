#version 450
/* dropout_bwd.comp — DBK_OP_DROPOUT_BWD: shaders/common/dropout.glsl on dy (the same mask). */
#include "common/dropout.glsl"
