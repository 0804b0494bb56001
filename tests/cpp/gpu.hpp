// Test helpers: skip a GPU-only test cleanly (saying why) on machines without a usable device.
#pragma once

#include <arrayport/runtime.hpp>
#include <gtest/gtest.h>

#define ARRAYPORT_SKIP_WITHOUT_GPU()                                                   \
  do {                                                                                 \
    if (!::arrayport::runtime::is_available())                                         \
      GTEST_SKIP() << "needs a CUDA device: " << ::arrayport::runtime::probe().reason; \
  } while (0)
