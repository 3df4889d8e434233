#include <catch2/catch.hpp>

#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/core/pending_reason.h"

namespace {

using rg::adapters::ParseClusterResources;
using rg::core::ErrorKind;
using rg::core::FindClusterResource;

// GET /api/cluster_status as a real head answered it (4 CPU, no GPU, worker_node 2, started by
// scripts/ray-head.sh), unedited.
constexpr const char* kRay2600 = R"json({
 "result": true,
 "msg": "Got cluster status.",
 "data": {
  "autoscalingStatus": "Cluster status: 0 nodes\n - MostDelayedHeartbeats: {'dde4205d375d9109f303a1f3ede192f0e41925dd570811d197dc8b79': 0.001256704330444336}\n - NodeIdleSeconds: Min=853 Mean=853 Max=853\n - ResourceUsage: 0.0/4.0 CPU, 0.0 GiB/22.43 GiB memory, 0.0 GiB/0.25 GiB object_store_memory, 0.0/2.0 worker_node\n - TimeSinceLastHeartbeat: Min=0 Mean=0 Max=0\nWorker node types:",
  "autoscalingError": null,
  "clusterStatus": {
   "gcsRequestTime": 0.0021545886993408203,
   "time": 1795614947.97909,
   "monitorPid": 28926,
   "autoscalerUpdateTime": 0.0013904571533203125,
   "autoscalerReport": {
    "activeNodes": {
     "nodeDde4205D375D9109F303A1F3Ede192F0E41925Dd570811D197Dc8B79": 1
    },
    "idleNodes": null,
    "pendingNodes": [],
    "pendingLaunches": {},
    "failedNodes": [],
    "nodeAvailabilitySummary": {
     "nodeAvailabilities": {}
    },
    "nodeActivities": null,
    "pendingResources": {},
    "nodeTypeMapping": {
     "dde4205d375d9109f303a1f3ede192f0e41925dd570811d197dc8b79": "node_dde4205d375d9109f303a1f3ede192f0e41925dd570811d197dc8b79"
    },
    "legacy": true
   },
   "nonTerminatedNodesTime": 4.76837158203125e-06,
   "loadMetricsReport": {
    "usage": {
     "workerNode": [
      0.0,
      2.0
     ],
     "CPU": [
      0.0,
      4.0
     ],
     "node:127.0.0.1": [
      0.0,
      1.0
     ],
     "objectStoreMemory": [
      0.0,
      268435456.0
     ],
     "node:InternalHead": [
      0.0,
      1.0
     ],
     "memory": [
      0.0,
      24088506368.0
     ]
    },
    "resourceDemand": [],
    "pgDemand": [],
    "requestDemand": [],
    "nodeTypes": [
     [
      {
       "object_store_memory": 268435456.0,
       "worker_node": 2.0,
       "node:127.0.0.1": 1.0,
       "node:__internal_head__": 1.0,
       "CPU": 4.0,
       "memory": 24088506368.0
      },
      1
     ]
    ],
    "headIp": null,
    "usageByNode": {
     "dde4205d375d9109f303a1f3ede192f0e41925dd570811d197dc8b79": {
      "workerNode": [
       0.0,
       2.0
      ],
      "CPU": [
       0.0,
       4.0
      ],
      "node:127.0.0.1": [
       0.0,
       1.0
      ],
      "objectStoreMemory": [
       0.0,
       268435456.0
      ],
      "node:InternalHead": [
       0.0,
       1.0
      ],
      "memory": [
       0.0,
       24088506368.0
      ]
     }
    },
    "nodeTypeMapping": null,
    "idleTimeMap": null
   }
  }
 }
})json";
constexpr const char* kRay2511 = R"json({
 "result": true,
 "msg": "Got cluster status.",
 "data": {
  "autoscalingStatus": "Cluster status: 0 nodes\n - MostDelayedHeartbeats: {'9bb13995759f41ab2283be30c1aa8cb2b303f6c86c058d40b2294c4b': 0.0011441707611083984}\n - NodeIdleSeconds: Min=853 Mean=853 Max=853\n - ResourceUsage: 0.0/4.0 CPU, 0.0 GiB/21.92 GiB memory, 0.0 GiB/0.25 GiB object_store_memory, 0.0/2.0 worker_node\n - TimeSinceLastHeartbeat: Min=0 Mean=0 Max=0\nWorker node types:",
  "autoscalingError": null,
  "clusterStatus": {
   "gcsRequestTime": 0.0019345283508300781,
   "time": 1795614948.1418576,
   "monitorPid": 28945,
   "autoscalerUpdateTime": 0.0015571117401123047,
   "autoscalerReport": {
    "activeNodes": {
     "node9Bb13995759F41Ab2283Be30C1Aa8Cb2B303F6C86C058D40B2294C4B": 1
    },
    "idleNodes": null,
    "pendingNodes": [],
    "pendingLaunches": {},
    "failedNodes": [],
    "nodeAvailabilitySummary": {
     "nodeAvailabilities": {}
    },
    "nodeActivities": null,
    "pendingResources": {},
    "nodeTypeMapping": {
     "9bb13995759f41ab2283be30c1aa8cb2b303f6c86c058d40b2294c4b": "node_9bb13995759f41ab2283be30c1aa8cb2b303f6c86c058d40b2294c4b"
    },
    "legacy": true
   },
   "nonTerminatedNodesTime": 4.291534423828125e-06,
   "loadMetricsReport": {
    "usage": {
     "CPU": [
      0.0,
      4.0
     ],
     "objectStoreMemory": [
      0.0,
      268435456.0
     ],
     "node:127.0.0.1": [
      0.0,
      1.0
     ],
     "workerNode": [
      0.0,
      2.0
     ],
     "memory": [
      0.0,
      23536082944.0
     ],
     "node:InternalHead": [
      0.0,
      1.0
     ]
    },
    "resourceDemand": [],
    "pgDemand": [],
    "requestDemand": [],
    "nodeTypes": [
     [
      {
       "node:127.0.0.1": 1.0,
       "worker_node": 2.0,
       "object_store_memory": 268435456.0,
       "CPU": 4.0,
       "node:__internal_head__": 1.0,
       "memory": 23536082944.0
      },
      1
     ]
    ],
    "headIp": null,
    "usageByNode": {
     "9bb13995759f41ab2283be30c1aa8cb2b303f6c86c058d40b2294c4b": {
      "CPU": [
       0.0,
       4.0
      ],
      "objectStoreMemory": [
       0.0,
       268435456.0
      ],
      "node:127.0.0.1": [
       0.0,
       1.0
      ],
      "workerNode": [
       0.0,
       2.0
      ],
      "memory": [
       0.0,
       23536082944.0
      ],
      "node:InternalHead": [
       0.0,
       1.0
      ]
     }
    },
    "nodeTypeMapping": null,
    "idleTimeMap": null
   }
  }
 }
})json";

TEST_CASE("cluster resources from the answers of Ray 2.60.0 and 2.51.1", "[ray_http]") {
  for (const char* body : {kRay2600, kRay2511}) {
    auto r = ParseClusterResources(body);
    REQUIRE(r.ok());
    CHECK(FindClusterResource(r->total, "CPU") == 4.0);
    CHECK(FindClusterResource(r->available, "CPU") == 4.0);
    CHECK(FindClusterResource(r->total, "worker_node") == 2.0);
    CHECK(r->total.contains("workerNode"));  // the dashboard's camelCase, kept as sent
    CHECK_FALSE(FindClusterResource(r->total, "GPU").has_value());
    CHECK(FindClusterResource(r->total, "memory") > 1e9);  // bytes
    CHECK(FindClusterResource(r->total, "object_store_memory") == 268435456.0);
  }
}

TEST_CASE("used amounts are taken off the totals", "[ray_http]") {
  auto r = ParseClusterResources(
      R"({"result":true,"data":{"clusterStatus":{"loadMetricsReport":{"usage":{
          "GPU":[1.5,2.0],"CPU":[5.0,4.0],"odd":[1],"text":["a","b"]}}}}})");
  REQUIRE(r.ok());
  CHECK(r->total.at("GPU") == 2.0);
  CHECK(r->available.at("GPU") == 0.5);
  CHECK(r->available.at("CPU") == 0.0);  // never below zero
  CHECK_FALSE(r->total.contains("odd"));
  CHECK_FALSE(r->total.contains("text"));
}

TEST_CASE("a head with no report yet, and answers of another shape", "[ray_http]") {
  auto fresh = ParseClusterResources(
      R"({"result":true,"msg":"Got cluster status.","data":{"autoscalingStatus":null,)"
      R"("autoscalingError":null,"clusterStatus":null}})");
  REQUIRE_FALSE(fresh.ok());
  CHECK(fresh.error().kind() == ErrorKind::kTransient);
  for (const char* body : {"", "[]", "not json", R"({"data":{"clusterStatus":{}}})",
                           R"({"data":{"clusterStatus":"text"}})",
                           R"({"data":{"clusterStatus":{"loadMetricsReport":{"usage":[]}}}})"}) {
    INFO(body);
    auto r = ParseClusterResources(body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind() == ErrorKind::kFatal);
  }
}

}  // namespace
