/* SPDX-License-Identifier: MIT */
/* ward.h and its layout checks compiled as C++ (see layout.c). */
#include "layout.c"
