# Tests of embedding depengine in other frameworks (docs/embedding.md).

depengine_add_test(embedding_c_api_tests embedding_c_api_test.cpp)
depengine_add_test(embedding_external_ops_tests embedding_external_ops_test.cpp)
depengine_add_test(embedding_custom_device_tests embedding_custom_device_test.cpp)
