/* arrayport version: the one place it is written (CMake and pyproject read it from here). */
#ifndef ARRAYPORT_VERSION_H
#define ARRAYPORT_VERSION_H

#define ARRAYPORT_VERSION_MAJOR 0
#define ARRAYPORT_VERSION_MINOR 1
#define ARRAYPORT_VERSION_PATCH 0
#define ARRAYPORT_VERSION_STRING "0.1.0"

#endif /* ARRAYPORT_VERSION_H */
