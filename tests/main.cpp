#define BOOST_TEST_MODULE rdmaconf
#include <boost/test/unit_test.hpp>
