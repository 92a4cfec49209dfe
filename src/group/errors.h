/* errors.h - what the group room answers with: Kafka's error codes (proto/errors.h) and the
 * ACL operations DescribeGroups reports for a classic group.
 */
#ifndef KC_GROUP_ERRORS_H
#define KC_GROUP_ERRORS_H

#include "proto/errors.h"

/* Kafka's ACL operation codes (AclOperation.java), as bits of DescribeGroups'
 * authorized_operations: a classic group supports READ, DELETE and DESCRIBE. */
#define KC_GROUP_ACL_READ     3
#define KC_GROUP_ACL_DELETE   6
#define KC_GROUP_ACL_DESCRIBE 8
#define KC_GROUP_AUTHORIZED_OPERATIONS                                                             \
    ((1 << KC_GROUP_ACL_READ) | (1 << KC_GROUP_ACL_DELETE) | (1 << KC_GROUP_ACL_DESCRIBE))

#endif
