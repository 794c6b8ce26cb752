package io.github.resultsync.fitness.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * RepairService plans, executes, audits and verifies repairs of discrepancies
 * found by reconciliation, each class in its own way: replay with the existing
 * version (missing, stale), versioned tombstone (deletion not applied),
 * controlled rebuild (same version, wrong content), audited removal or
 * supersession (unexpected record, target ahead of source). A repair is done
 * only when verified: a follow-up comparison of exactly its keys is clean.
 * Repairs and rebuilds are resources with a state machine: get, list, watch
 * (server streaming) and cancel them. Every mutating call is audited with its
 * caller. Reads need viewer; planning, creating, verifying and cancelling
 * repairs operator; approvals and rebuilds admin, and the approver must differ
 * from the requester unless the server runs with --allow-self-approval.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class RepairServiceGrpc {

  private RepairServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "fitness.v1.RepairService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CreateRepairRequest,
      io.github.resultsync.fitness.v1.CreateRepairResponse> getCreateRepairMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CreateRepair",
      requestType = io.github.resultsync.fitness.v1.CreateRepairRequest.class,
      responseType = io.github.resultsync.fitness.v1.CreateRepairResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CreateRepairRequest,
      io.github.resultsync.fitness.v1.CreateRepairResponse> getCreateRepairMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CreateRepairRequest, io.github.resultsync.fitness.v1.CreateRepairResponse> getCreateRepairMethod;
    if ((getCreateRepairMethod = RepairServiceGrpc.getCreateRepairMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getCreateRepairMethod = RepairServiceGrpc.getCreateRepairMethod) == null) {
          RepairServiceGrpc.getCreateRepairMethod = getCreateRepairMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.CreateRepairRequest, io.github.resultsync.fitness.v1.CreateRepairResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CreateRepair"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.CreateRepairRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.CreateRepairResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("CreateRepair"))
              .build();
        }
      }
    }
    return getCreateRepairMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.PlanRepairRequest,
      io.github.resultsync.fitness.v1.PlanRepairResponse> getPlanRepairMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "PlanRepair",
      requestType = io.github.resultsync.fitness.v1.PlanRepairRequest.class,
      responseType = io.github.resultsync.fitness.v1.PlanRepairResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.PlanRepairRequest,
      io.github.resultsync.fitness.v1.PlanRepairResponse> getPlanRepairMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.PlanRepairRequest, io.github.resultsync.fitness.v1.PlanRepairResponse> getPlanRepairMethod;
    if ((getPlanRepairMethod = RepairServiceGrpc.getPlanRepairMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getPlanRepairMethod = RepairServiceGrpc.getPlanRepairMethod) == null) {
          RepairServiceGrpc.getPlanRepairMethod = getPlanRepairMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.PlanRepairRequest, io.github.resultsync.fitness.v1.PlanRepairResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "PlanRepair"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.PlanRepairRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.PlanRepairResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("PlanRepair"))
              .build();
        }
      }
    }
    return getPlanRepairMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ApproveRepairRequest,
      io.github.resultsync.fitness.v1.ApproveRepairResponse> getApproveRepairMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ApproveRepair",
      requestType = io.github.resultsync.fitness.v1.ApproveRepairRequest.class,
      responseType = io.github.resultsync.fitness.v1.ApproveRepairResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ApproveRepairRequest,
      io.github.resultsync.fitness.v1.ApproveRepairResponse> getApproveRepairMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ApproveRepairRequest, io.github.resultsync.fitness.v1.ApproveRepairResponse> getApproveRepairMethod;
    if ((getApproveRepairMethod = RepairServiceGrpc.getApproveRepairMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getApproveRepairMethod = RepairServiceGrpc.getApproveRepairMethod) == null) {
          RepairServiceGrpc.getApproveRepairMethod = getApproveRepairMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ApproveRepairRequest, io.github.resultsync.fitness.v1.ApproveRepairResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ApproveRepair"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ApproveRepairRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ApproveRepairResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("ApproveRepair"))
              .build();
        }
      }
    }
    return getApproveRepairMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetRepairRequest,
      io.github.resultsync.fitness.v1.GetRepairResponse> getGetRepairMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetRepair",
      requestType = io.github.resultsync.fitness.v1.GetRepairRequest.class,
      responseType = io.github.resultsync.fitness.v1.GetRepairResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetRepairRequest,
      io.github.resultsync.fitness.v1.GetRepairResponse> getGetRepairMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetRepairRequest, io.github.resultsync.fitness.v1.GetRepairResponse> getGetRepairMethod;
    if ((getGetRepairMethod = RepairServiceGrpc.getGetRepairMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getGetRepairMethod = RepairServiceGrpc.getGetRepairMethod) == null) {
          RepairServiceGrpc.getGetRepairMethod = getGetRepairMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.GetRepairRequest, io.github.resultsync.fitness.v1.GetRepairResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetRepair"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetRepairRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetRepairResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("GetRepair"))
              .build();
        }
      }
    }
    return getGetRepairMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListRepairsRequest,
      io.github.resultsync.fitness.v1.ListRepairsResponse> getListRepairsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListRepairs",
      requestType = io.github.resultsync.fitness.v1.ListRepairsRequest.class,
      responseType = io.github.resultsync.fitness.v1.ListRepairsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListRepairsRequest,
      io.github.resultsync.fitness.v1.ListRepairsResponse> getListRepairsMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListRepairsRequest, io.github.resultsync.fitness.v1.ListRepairsResponse> getListRepairsMethod;
    if ((getListRepairsMethod = RepairServiceGrpc.getListRepairsMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getListRepairsMethod = RepairServiceGrpc.getListRepairsMethod) == null) {
          RepairServiceGrpc.getListRepairsMethod = getListRepairsMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ListRepairsRequest, io.github.resultsync.fitness.v1.ListRepairsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListRepairs"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListRepairsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListRepairsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("ListRepairs"))
              .build();
        }
      }
    }
    return getListRepairsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListRepairItemsRequest,
      io.github.resultsync.fitness.v1.ListRepairItemsResponse> getListRepairItemsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListRepairItems",
      requestType = io.github.resultsync.fitness.v1.ListRepairItemsRequest.class,
      responseType = io.github.resultsync.fitness.v1.ListRepairItemsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListRepairItemsRequest,
      io.github.resultsync.fitness.v1.ListRepairItemsResponse> getListRepairItemsMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListRepairItemsRequest, io.github.resultsync.fitness.v1.ListRepairItemsResponse> getListRepairItemsMethod;
    if ((getListRepairItemsMethod = RepairServiceGrpc.getListRepairItemsMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getListRepairItemsMethod = RepairServiceGrpc.getListRepairItemsMethod) == null) {
          RepairServiceGrpc.getListRepairItemsMethod = getListRepairItemsMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ListRepairItemsRequest, io.github.resultsync.fitness.v1.ListRepairItemsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListRepairItems"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListRepairItemsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListRepairItemsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("ListRepairItems"))
              .build();
        }
      }
    }
    return getListRepairItemsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.VerifyRepairRequest,
      io.github.resultsync.fitness.v1.VerifyRepairResponse> getVerifyRepairMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "VerifyRepair",
      requestType = io.github.resultsync.fitness.v1.VerifyRepairRequest.class,
      responseType = io.github.resultsync.fitness.v1.VerifyRepairResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.VerifyRepairRequest,
      io.github.resultsync.fitness.v1.VerifyRepairResponse> getVerifyRepairMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.VerifyRepairRequest, io.github.resultsync.fitness.v1.VerifyRepairResponse> getVerifyRepairMethod;
    if ((getVerifyRepairMethod = RepairServiceGrpc.getVerifyRepairMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getVerifyRepairMethod = RepairServiceGrpc.getVerifyRepairMethod) == null) {
          RepairServiceGrpc.getVerifyRepairMethod = getVerifyRepairMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.VerifyRepairRequest, io.github.resultsync.fitness.v1.VerifyRepairResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "VerifyRepair"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.VerifyRepairRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.VerifyRepairResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("VerifyRepair"))
              .build();
        }
      }
    }
    return getVerifyRepairMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.WatchRepairRequest,
      io.github.resultsync.fitness.v1.WatchRepairResponse> getWatchRepairMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "WatchRepair",
      requestType = io.github.resultsync.fitness.v1.WatchRepairRequest.class,
      responseType = io.github.resultsync.fitness.v1.WatchRepairResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.WatchRepairRequest,
      io.github.resultsync.fitness.v1.WatchRepairResponse> getWatchRepairMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.WatchRepairRequest, io.github.resultsync.fitness.v1.WatchRepairResponse> getWatchRepairMethod;
    if ((getWatchRepairMethod = RepairServiceGrpc.getWatchRepairMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getWatchRepairMethod = RepairServiceGrpc.getWatchRepairMethod) == null) {
          RepairServiceGrpc.getWatchRepairMethod = getWatchRepairMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.WatchRepairRequest, io.github.resultsync.fitness.v1.WatchRepairResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "WatchRepair"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.WatchRepairRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.WatchRepairResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("WatchRepair"))
              .build();
        }
      }
    }
    return getWatchRepairMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CancelRepairRequest,
      io.github.resultsync.fitness.v1.CancelRepairResponse> getCancelRepairMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CancelRepair",
      requestType = io.github.resultsync.fitness.v1.CancelRepairRequest.class,
      responseType = io.github.resultsync.fitness.v1.CancelRepairResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CancelRepairRequest,
      io.github.resultsync.fitness.v1.CancelRepairResponse> getCancelRepairMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CancelRepairRequest, io.github.resultsync.fitness.v1.CancelRepairResponse> getCancelRepairMethod;
    if ((getCancelRepairMethod = RepairServiceGrpc.getCancelRepairMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getCancelRepairMethod = RepairServiceGrpc.getCancelRepairMethod) == null) {
          RepairServiceGrpc.getCancelRepairMethod = getCancelRepairMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.CancelRepairRequest, io.github.resultsync.fitness.v1.CancelRepairResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CancelRepair"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.CancelRepairRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.CancelRepairResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("CancelRepair"))
              .build();
        }
      }
    }
    return getCancelRepairMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.StartRebuildRequest,
      io.github.resultsync.fitness.v1.StartRebuildResponse> getStartRebuildMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "StartRebuild",
      requestType = io.github.resultsync.fitness.v1.StartRebuildRequest.class,
      responseType = io.github.resultsync.fitness.v1.StartRebuildResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.StartRebuildRequest,
      io.github.resultsync.fitness.v1.StartRebuildResponse> getStartRebuildMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.StartRebuildRequest, io.github.resultsync.fitness.v1.StartRebuildResponse> getStartRebuildMethod;
    if ((getStartRebuildMethod = RepairServiceGrpc.getStartRebuildMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getStartRebuildMethod = RepairServiceGrpc.getStartRebuildMethod) == null) {
          RepairServiceGrpc.getStartRebuildMethod = getStartRebuildMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.StartRebuildRequest, io.github.resultsync.fitness.v1.StartRebuildResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "StartRebuild"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.StartRebuildRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.StartRebuildResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("StartRebuild"))
              .build();
        }
      }
    }
    return getStartRebuildMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ApproveRebuildRequest,
      io.github.resultsync.fitness.v1.ApproveRebuildResponse> getApproveRebuildMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ApproveRebuild",
      requestType = io.github.resultsync.fitness.v1.ApproveRebuildRequest.class,
      responseType = io.github.resultsync.fitness.v1.ApproveRebuildResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ApproveRebuildRequest,
      io.github.resultsync.fitness.v1.ApproveRebuildResponse> getApproveRebuildMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ApproveRebuildRequest, io.github.resultsync.fitness.v1.ApproveRebuildResponse> getApproveRebuildMethod;
    if ((getApproveRebuildMethod = RepairServiceGrpc.getApproveRebuildMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getApproveRebuildMethod = RepairServiceGrpc.getApproveRebuildMethod) == null) {
          RepairServiceGrpc.getApproveRebuildMethod = getApproveRebuildMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ApproveRebuildRequest, io.github.resultsync.fitness.v1.ApproveRebuildResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ApproveRebuild"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ApproveRebuildRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ApproveRebuildResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("ApproveRebuild"))
              .build();
        }
      }
    }
    return getApproveRebuildMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetRebuildRequest,
      io.github.resultsync.fitness.v1.GetRebuildResponse> getGetRebuildMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetRebuild",
      requestType = io.github.resultsync.fitness.v1.GetRebuildRequest.class,
      responseType = io.github.resultsync.fitness.v1.GetRebuildResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetRebuildRequest,
      io.github.resultsync.fitness.v1.GetRebuildResponse> getGetRebuildMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetRebuildRequest, io.github.resultsync.fitness.v1.GetRebuildResponse> getGetRebuildMethod;
    if ((getGetRebuildMethod = RepairServiceGrpc.getGetRebuildMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getGetRebuildMethod = RepairServiceGrpc.getGetRebuildMethod) == null) {
          RepairServiceGrpc.getGetRebuildMethod = getGetRebuildMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.GetRebuildRequest, io.github.resultsync.fitness.v1.GetRebuildResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetRebuild"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetRebuildRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetRebuildResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("GetRebuild"))
              .build();
        }
      }
    }
    return getGetRebuildMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListRebuildsRequest,
      io.github.resultsync.fitness.v1.ListRebuildsResponse> getListRebuildsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListRebuilds",
      requestType = io.github.resultsync.fitness.v1.ListRebuildsRequest.class,
      responseType = io.github.resultsync.fitness.v1.ListRebuildsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListRebuildsRequest,
      io.github.resultsync.fitness.v1.ListRebuildsResponse> getListRebuildsMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListRebuildsRequest, io.github.resultsync.fitness.v1.ListRebuildsResponse> getListRebuildsMethod;
    if ((getListRebuildsMethod = RepairServiceGrpc.getListRebuildsMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getListRebuildsMethod = RepairServiceGrpc.getListRebuildsMethod) == null) {
          RepairServiceGrpc.getListRebuildsMethod = getListRebuildsMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ListRebuildsRequest, io.github.resultsync.fitness.v1.ListRebuildsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListRebuilds"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListRebuildsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListRebuildsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("ListRebuilds"))
              .build();
        }
      }
    }
    return getListRebuildsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.WatchRebuildRequest,
      io.github.resultsync.fitness.v1.WatchRebuildResponse> getWatchRebuildMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "WatchRebuild",
      requestType = io.github.resultsync.fitness.v1.WatchRebuildRequest.class,
      responseType = io.github.resultsync.fitness.v1.WatchRebuildResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.WatchRebuildRequest,
      io.github.resultsync.fitness.v1.WatchRebuildResponse> getWatchRebuildMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.WatchRebuildRequest, io.github.resultsync.fitness.v1.WatchRebuildResponse> getWatchRebuildMethod;
    if ((getWatchRebuildMethod = RepairServiceGrpc.getWatchRebuildMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getWatchRebuildMethod = RepairServiceGrpc.getWatchRebuildMethod) == null) {
          RepairServiceGrpc.getWatchRebuildMethod = getWatchRebuildMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.WatchRebuildRequest, io.github.resultsync.fitness.v1.WatchRebuildResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "WatchRebuild"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.WatchRebuildRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.WatchRebuildResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("WatchRebuild"))
              .build();
        }
      }
    }
    return getWatchRebuildMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CancelRebuildRequest,
      io.github.resultsync.fitness.v1.CancelRebuildResponse> getCancelRebuildMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CancelRebuild",
      requestType = io.github.resultsync.fitness.v1.CancelRebuildRequest.class,
      responseType = io.github.resultsync.fitness.v1.CancelRebuildResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CancelRebuildRequest,
      io.github.resultsync.fitness.v1.CancelRebuildResponse> getCancelRebuildMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CancelRebuildRequest, io.github.resultsync.fitness.v1.CancelRebuildResponse> getCancelRebuildMethod;
    if ((getCancelRebuildMethod = RepairServiceGrpc.getCancelRebuildMethod) == null) {
      synchronized (RepairServiceGrpc.class) {
        if ((getCancelRebuildMethod = RepairServiceGrpc.getCancelRebuildMethod) == null) {
          RepairServiceGrpc.getCancelRebuildMethod = getCancelRebuildMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.CancelRebuildRequest, io.github.resultsync.fitness.v1.CancelRebuildResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CancelRebuild"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.CancelRebuildRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.CancelRebuildResponse.getDefaultInstance()))
              .setSchemaDescriptor(new RepairServiceMethodDescriptorSupplier("CancelRebuild"))
              .build();
        }
      }
    }
    return getCancelRebuildMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static RepairServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<RepairServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<RepairServiceStub>() {
        @java.lang.Override
        public RepairServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new RepairServiceStub(channel, callOptions);
        }
      };
    return RepairServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static RepairServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<RepairServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<RepairServiceBlockingV2Stub>() {
        @java.lang.Override
        public RepairServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new RepairServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return RepairServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static RepairServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<RepairServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<RepairServiceBlockingStub>() {
        @java.lang.Override
        public RepairServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new RepairServiceBlockingStub(channel, callOptions);
        }
      };
    return RepairServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static RepairServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<RepairServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<RepairServiceFutureStub>() {
        @java.lang.Override
        public RepairServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new RepairServiceFutureStub(channel, callOptions);
        }
      };
    return RepairServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * RepairService plans, executes, audits and verifies repairs of discrepancies
   * found by reconciliation, each class in its own way: replay with the existing
   * version (missing, stale), versioned tombstone (deletion not applied),
   * controlled rebuild (same version, wrong content), audited removal or
   * supersession (unexpected record, target ahead of source). A repair is done
   * only when verified: a follow-up comparison of exactly its keys is clean.
   * Repairs and rebuilds are resources with a state machine: get, list, watch
   * (server streaming) and cancel them. Every mutating call is audited with its
   * caller. Reads need viewer; planning, creating, verifying and cancelling
   * repairs operator; approvals and rebuilds admin, and the approver must differ
   * from the requester unless the server runs with --allow-self-approval.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Plans a repair for discrepancies of a reconciliation run: one repair per
     * action. Replays and tombstones start at once; rebuilds and removals wait
     * for approval. Idempotent by request_id.
     * </pre>
     */
    default void createRepair(io.github.resultsync.fitness.v1.CreateRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CreateRepairResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCreateRepairMethod(), responseObserver);
    }

    /**
     * <pre>
     * Dry run of CreateRepair: what would be replayed, tombstoned, rebuilt or
     * removed, with counts per action and per shard; changes nothing.
     * </pre>
     */
    default void planRepair(io.github.resultsync.fitness.v1.PlanRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.PlanRepairResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getPlanRepairMethod(), responseObserver);
    }

    /**
     * <pre>
     * Approves a repair that needs approval (removals, rebuilds); admin only,
     * and not the requester (unless the server allows self-approval).
     * Idempotent by the optional request_id.
     * </pre>
     */
    default void approveRepair(io.github.resultsync.fitness.v1.ApproveRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ApproveRepairResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getApproveRepairMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns one repair and its state transitions.
     * </pre>
     */
    default void getRepair(io.github.resultsync.fitness.v1.GetRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetRepairResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetRepairMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists repairs, newest first.
     * </pre>
     */
    default void listRepairs(io.github.resultsync.fitness.v1.ListRepairsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListRepairsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListRepairsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists the items of a repair (one per discrepancy) in plan order.
     * </pre>
     */
    default void listRepairItems(io.github.resultsync.fitness.v1.ListRepairItemsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListRepairItemsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListRepairItemsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Runs the verification of a repair now (it also runs automatically after
     * execution) and stores the result. Idempotent by the optional request_id.
     * </pre>
     */
    default void verifyRepair(io.github.resultsync.fitness.v1.VerifyRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.VerifyRepairResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getVerifyRepairMethod(), responseObserver);
    }

    /**
     * <pre>
     * Streams the repair whenever it changes, until a terminal state.
     * </pre>
     */
    default void watchRepair(io.github.resultsync.fitness.v1.WatchRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.WatchRepairResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getWatchRepairMethod(), responseObserver);
    }

    /**
     * <pre>
     * Cancels a repair that has not ended; items already applied stay applied.
     * Idempotent by the optional request_id.
     * </pre>
     */
    default void cancelRepair(io.github.resultsync.fitness.v1.CancelRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CancelRepairResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCancelRepairMethod(), responseObserver);
    }

    /**
     * <pre>
     * Starts a controlled rebuild of a campaign's projection; admin with approval.
     * </pre>
     */
    default void startRebuild(io.github.resultsync.fitness.v1.StartRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.StartRebuildResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getStartRebuildMethod(), responseObserver);
    }

    /**
     * <pre>
     * Approves a rebuild; admin only, and not the requester (unless the server
     * allows self-approval). Idempotent by the optional request_id.
     * </pre>
     */
    default void approveRebuild(io.github.resultsync.fitness.v1.ApproveRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ApproveRebuildResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getApproveRebuildMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns one rebuild and its state transitions.
     * </pre>
     */
    default void getRebuild(io.github.resultsync.fitness.v1.GetRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetRebuildResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetRebuildMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists rebuilds, newest first.
     * </pre>
     */
    default void listRebuilds(io.github.resultsync.fitness.v1.ListRebuildsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListRebuildsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListRebuildsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Streams the rebuild whenever it changes, until a terminal state.
     * </pre>
     */
    default void watchRebuild(io.github.resultsync.fitness.v1.WatchRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.WatchRebuildResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getWatchRebuildMethod(), responseObserver);
    }

    /**
     * <pre>
     * Cancels a rebuild before it starts switching readers. Idempotent by the
     * optional request_id.
     * </pre>
     */
    default void cancelRebuild(io.github.resultsync.fitness.v1.CancelRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CancelRebuildResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCancelRebuildMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service RepairService.
   * <pre>
   * RepairService plans, executes, audits and verifies repairs of discrepancies
   * found by reconciliation, each class in its own way: replay with the existing
   * version (missing, stale), versioned tombstone (deletion not applied),
   * controlled rebuild (same version, wrong content), audited removal or
   * supersession (unexpected record, target ahead of source). A repair is done
   * only when verified: a follow-up comparison of exactly its keys is clean.
   * Repairs and rebuilds are resources with a state machine: get, list, watch
   * (server streaming) and cancel them. Every mutating call is audited with its
   * caller. Reads need viewer; planning, creating, verifying and cancelling
   * repairs operator; approvals and rebuilds admin, and the approver must differ
   * from the requester unless the server runs with --allow-self-approval.
   * </pre>
   */
  public static abstract class RepairServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return RepairServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service RepairService.
   * <pre>
   * RepairService plans, executes, audits and verifies repairs of discrepancies
   * found by reconciliation, each class in its own way: replay with the existing
   * version (missing, stale), versioned tombstone (deletion not applied),
   * controlled rebuild (same version, wrong content), audited removal or
   * supersession (unexpected record, target ahead of source). A repair is done
   * only when verified: a follow-up comparison of exactly its keys is clean.
   * Repairs and rebuilds are resources with a state machine: get, list, watch
   * (server streaming) and cancel them. Every mutating call is audited with its
   * caller. Reads need viewer; planning, creating, verifying and cancelling
   * repairs operator; approvals and rebuilds admin, and the approver must differ
   * from the requester unless the server runs with --allow-self-approval.
   * </pre>
   */
  public static final class RepairServiceStub
      extends io.grpc.stub.AbstractAsyncStub<RepairServiceStub> {
    private RepairServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected RepairServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new RepairServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Plans a repair for discrepancies of a reconciliation run: one repair per
     * action. Replays and tombstones start at once; rebuilds and removals wait
     * for approval. Idempotent by request_id.
     * </pre>
     */
    public void createRepair(io.github.resultsync.fitness.v1.CreateRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CreateRepairResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCreateRepairMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Dry run of CreateRepair: what would be replayed, tombstoned, rebuilt or
     * removed, with counts per action and per shard; changes nothing.
     * </pre>
     */
    public void planRepair(io.github.resultsync.fitness.v1.PlanRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.PlanRepairResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getPlanRepairMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Approves a repair that needs approval (removals, rebuilds); admin only,
     * and not the requester (unless the server allows self-approval).
     * Idempotent by the optional request_id.
     * </pre>
     */
    public void approveRepair(io.github.resultsync.fitness.v1.ApproveRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ApproveRepairResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getApproveRepairMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns one repair and its state transitions.
     * </pre>
     */
    public void getRepair(io.github.resultsync.fitness.v1.GetRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetRepairResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetRepairMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists repairs, newest first.
     * </pre>
     */
    public void listRepairs(io.github.resultsync.fitness.v1.ListRepairsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListRepairsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListRepairsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists the items of a repair (one per discrepancy) in plan order.
     * </pre>
     */
    public void listRepairItems(io.github.resultsync.fitness.v1.ListRepairItemsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListRepairItemsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListRepairItemsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Runs the verification of a repair now (it also runs automatically after
     * execution) and stores the result. Idempotent by the optional request_id.
     * </pre>
     */
    public void verifyRepair(io.github.resultsync.fitness.v1.VerifyRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.VerifyRepairResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getVerifyRepairMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Streams the repair whenever it changes, until a terminal state.
     * </pre>
     */
    public void watchRepair(io.github.resultsync.fitness.v1.WatchRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.WatchRepairResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getWatchRepairMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Cancels a repair that has not ended; items already applied stay applied.
     * Idempotent by the optional request_id.
     * </pre>
     */
    public void cancelRepair(io.github.resultsync.fitness.v1.CancelRepairRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CancelRepairResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCancelRepairMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Starts a controlled rebuild of a campaign's projection; admin with approval.
     * </pre>
     */
    public void startRebuild(io.github.resultsync.fitness.v1.StartRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.StartRebuildResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getStartRebuildMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Approves a rebuild; admin only, and not the requester (unless the server
     * allows self-approval). Idempotent by the optional request_id.
     * </pre>
     */
    public void approveRebuild(io.github.resultsync.fitness.v1.ApproveRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ApproveRebuildResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getApproveRebuildMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns one rebuild and its state transitions.
     * </pre>
     */
    public void getRebuild(io.github.resultsync.fitness.v1.GetRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetRebuildResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetRebuildMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists rebuilds, newest first.
     * </pre>
     */
    public void listRebuilds(io.github.resultsync.fitness.v1.ListRebuildsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListRebuildsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListRebuildsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Streams the rebuild whenever it changes, until a terminal state.
     * </pre>
     */
    public void watchRebuild(io.github.resultsync.fitness.v1.WatchRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.WatchRebuildResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getWatchRebuildMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Cancels a rebuild before it starts switching readers. Idempotent by the
     * optional request_id.
     * </pre>
     */
    public void cancelRebuild(io.github.resultsync.fitness.v1.CancelRebuildRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CancelRebuildResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCancelRebuildMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service RepairService.
   * <pre>
   * RepairService plans, executes, audits and verifies repairs of discrepancies
   * found by reconciliation, each class in its own way: replay with the existing
   * version (missing, stale), versioned tombstone (deletion not applied),
   * controlled rebuild (same version, wrong content), audited removal or
   * supersession (unexpected record, target ahead of source). A repair is done
   * only when verified: a follow-up comparison of exactly its keys is clean.
   * Repairs and rebuilds are resources with a state machine: get, list, watch
   * (server streaming) and cancel them. Every mutating call is audited with its
   * caller. Reads need viewer; planning, creating, verifying and cancelling
   * repairs operator; approvals and rebuilds admin, and the approver must differ
   * from the requester unless the server runs with --allow-self-approval.
   * </pre>
   */
  public static final class RepairServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<RepairServiceBlockingV2Stub> {
    private RepairServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected RepairServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new RepairServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Plans a repair for discrepancies of a reconciliation run: one repair per
     * action. Replays and tombstones start at once; rebuilds and removals wait
     * for approval. Idempotent by request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.CreateRepairResponse createRepair(io.github.resultsync.fitness.v1.CreateRepairRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCreateRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Dry run of CreateRepair: what would be replayed, tombstoned, rebuilt or
     * removed, with counts per action and per shard; changes nothing.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.PlanRepairResponse planRepair(io.github.resultsync.fitness.v1.PlanRepairRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getPlanRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Approves a repair that needs approval (removals, rebuilds); admin only,
     * and not the requester (unless the server allows self-approval).
     * Idempotent by the optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ApproveRepairResponse approveRepair(io.github.resultsync.fitness.v1.ApproveRepairRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getApproveRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one repair and its state transitions.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetRepairResponse getRepair(io.github.resultsync.fitness.v1.GetRepairRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists repairs, newest first.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListRepairsResponse listRepairs(io.github.resultsync.fitness.v1.ListRepairsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListRepairsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the items of a repair (one per discrepancy) in plan order.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListRepairItemsResponse listRepairItems(io.github.resultsync.fitness.v1.ListRepairItemsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListRepairItemsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Runs the verification of a repair now (it also runs automatically after
     * execution) and stores the result. Idempotent by the optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.VerifyRepairResponse verifyRepair(io.github.resultsync.fitness.v1.VerifyRepairRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getVerifyRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Streams the repair whenever it changes, until a terminal state.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, io.github.resultsync.fitness.v1.WatchRepairResponse>
        watchRepair(io.github.resultsync.fitness.v1.WatchRepairRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getWatchRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Cancels a repair that has not ended; items already applied stay applied.
     * Idempotent by the optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.CancelRepairResponse cancelRepair(io.github.resultsync.fitness.v1.CancelRepairRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCancelRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Starts a controlled rebuild of a campaign's projection; admin with approval.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.StartRebuildResponse startRebuild(io.github.resultsync.fitness.v1.StartRebuildRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getStartRebuildMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Approves a rebuild; admin only, and not the requester (unless the server
     * allows self-approval). Idempotent by the optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ApproveRebuildResponse approveRebuild(io.github.resultsync.fitness.v1.ApproveRebuildRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getApproveRebuildMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one rebuild and its state transitions.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetRebuildResponse getRebuild(io.github.resultsync.fitness.v1.GetRebuildRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetRebuildMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists rebuilds, newest first.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListRebuildsResponse listRebuilds(io.github.resultsync.fitness.v1.ListRebuildsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListRebuildsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Streams the rebuild whenever it changes, until a terminal state.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, io.github.resultsync.fitness.v1.WatchRebuildResponse>
        watchRebuild(io.github.resultsync.fitness.v1.WatchRebuildRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getWatchRebuildMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Cancels a rebuild before it starts switching readers. Idempotent by the
     * optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.CancelRebuildResponse cancelRebuild(io.github.resultsync.fitness.v1.CancelRebuildRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCancelRebuildMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service RepairService.
   * <pre>
   * RepairService plans, executes, audits and verifies repairs of discrepancies
   * found by reconciliation, each class in its own way: replay with the existing
   * version (missing, stale), versioned tombstone (deletion not applied),
   * controlled rebuild (same version, wrong content), audited removal or
   * supersession (unexpected record, target ahead of source). A repair is done
   * only when verified: a follow-up comparison of exactly its keys is clean.
   * Repairs and rebuilds are resources with a state machine: get, list, watch
   * (server streaming) and cancel them. Every mutating call is audited with its
   * caller. Reads need viewer; planning, creating, verifying and cancelling
   * repairs operator; approvals and rebuilds admin, and the approver must differ
   * from the requester unless the server runs with --allow-self-approval.
   * </pre>
   */
  public static final class RepairServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<RepairServiceBlockingStub> {
    private RepairServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected RepairServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new RepairServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Plans a repair for discrepancies of a reconciliation run: one repair per
     * action. Replays and tombstones start at once; rebuilds and removals wait
     * for approval. Idempotent by request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.CreateRepairResponse createRepair(io.github.resultsync.fitness.v1.CreateRepairRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCreateRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Dry run of CreateRepair: what would be replayed, tombstoned, rebuilt or
     * removed, with counts per action and per shard; changes nothing.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.PlanRepairResponse planRepair(io.github.resultsync.fitness.v1.PlanRepairRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getPlanRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Approves a repair that needs approval (removals, rebuilds); admin only,
     * and not the requester (unless the server allows self-approval).
     * Idempotent by the optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ApproveRepairResponse approveRepair(io.github.resultsync.fitness.v1.ApproveRepairRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getApproveRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one repair and its state transitions.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetRepairResponse getRepair(io.github.resultsync.fitness.v1.GetRepairRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists repairs, newest first.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListRepairsResponse listRepairs(io.github.resultsync.fitness.v1.ListRepairsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListRepairsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the items of a repair (one per discrepancy) in plan order.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListRepairItemsResponse listRepairItems(io.github.resultsync.fitness.v1.ListRepairItemsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListRepairItemsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Runs the verification of a repair now (it also runs automatically after
     * execution) and stores the result. Idempotent by the optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.VerifyRepairResponse verifyRepair(io.github.resultsync.fitness.v1.VerifyRepairRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getVerifyRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Streams the repair whenever it changes, until a terminal state.
     * </pre>
     */
    public java.util.Iterator<io.github.resultsync.fitness.v1.WatchRepairResponse> watchRepair(
        io.github.resultsync.fitness.v1.WatchRepairRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getWatchRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Cancels a repair that has not ended; items already applied stay applied.
     * Idempotent by the optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.CancelRepairResponse cancelRepair(io.github.resultsync.fitness.v1.CancelRepairRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCancelRepairMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Starts a controlled rebuild of a campaign's projection; admin with approval.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.StartRebuildResponse startRebuild(io.github.resultsync.fitness.v1.StartRebuildRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getStartRebuildMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Approves a rebuild; admin only, and not the requester (unless the server
     * allows self-approval). Idempotent by the optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ApproveRebuildResponse approveRebuild(io.github.resultsync.fitness.v1.ApproveRebuildRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getApproveRebuildMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one rebuild and its state transitions.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetRebuildResponse getRebuild(io.github.resultsync.fitness.v1.GetRebuildRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetRebuildMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists rebuilds, newest first.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListRebuildsResponse listRebuilds(io.github.resultsync.fitness.v1.ListRebuildsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListRebuildsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Streams the rebuild whenever it changes, until a terminal state.
     * </pre>
     */
    public java.util.Iterator<io.github.resultsync.fitness.v1.WatchRebuildResponse> watchRebuild(
        io.github.resultsync.fitness.v1.WatchRebuildRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getWatchRebuildMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Cancels a rebuild before it starts switching readers. Idempotent by the
     * optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.CancelRebuildResponse cancelRebuild(io.github.resultsync.fitness.v1.CancelRebuildRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCancelRebuildMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service RepairService.
   * <pre>
   * RepairService plans, executes, audits and verifies repairs of discrepancies
   * found by reconciliation, each class in its own way: replay with the existing
   * version (missing, stale), versioned tombstone (deletion not applied),
   * controlled rebuild (same version, wrong content), audited removal or
   * supersession (unexpected record, target ahead of source). A repair is done
   * only when verified: a follow-up comparison of exactly its keys is clean.
   * Repairs and rebuilds are resources with a state machine: get, list, watch
   * (server streaming) and cancel them. Every mutating call is audited with its
   * caller. Reads need viewer; planning, creating, verifying and cancelling
   * repairs operator; approvals and rebuilds admin, and the approver must differ
   * from the requester unless the server runs with --allow-self-approval.
   * </pre>
   */
  public static final class RepairServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<RepairServiceFutureStub> {
    private RepairServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected RepairServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new RepairServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Plans a repair for discrepancies of a reconciliation run: one repair per
     * action. Replays and tombstones start at once; rebuilds and removals wait
     * for approval. Idempotent by request_id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.CreateRepairResponse> createRepair(
        io.github.resultsync.fitness.v1.CreateRepairRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCreateRepairMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Dry run of CreateRepair: what would be replayed, tombstoned, rebuilt or
     * removed, with counts per action and per shard; changes nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.PlanRepairResponse> planRepair(
        io.github.resultsync.fitness.v1.PlanRepairRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getPlanRepairMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Approves a repair that needs approval (removals, rebuilds); admin only,
     * and not the requester (unless the server allows self-approval).
     * Idempotent by the optional request_id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ApproveRepairResponse> approveRepair(
        io.github.resultsync.fitness.v1.ApproveRepairRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getApproveRepairMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns one repair and its state transitions.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.GetRepairResponse> getRepair(
        io.github.resultsync.fitness.v1.GetRepairRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetRepairMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists repairs, newest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ListRepairsResponse> listRepairs(
        io.github.resultsync.fitness.v1.ListRepairsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListRepairsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists the items of a repair (one per discrepancy) in plan order.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ListRepairItemsResponse> listRepairItems(
        io.github.resultsync.fitness.v1.ListRepairItemsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListRepairItemsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Runs the verification of a repair now (it also runs automatically after
     * execution) and stores the result. Idempotent by the optional request_id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.VerifyRepairResponse> verifyRepair(
        io.github.resultsync.fitness.v1.VerifyRepairRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getVerifyRepairMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Cancels a repair that has not ended; items already applied stay applied.
     * Idempotent by the optional request_id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.CancelRepairResponse> cancelRepair(
        io.github.resultsync.fitness.v1.CancelRepairRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCancelRepairMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Starts a controlled rebuild of a campaign's projection; admin with approval.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.StartRebuildResponse> startRebuild(
        io.github.resultsync.fitness.v1.StartRebuildRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getStartRebuildMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Approves a rebuild; admin only, and not the requester (unless the server
     * allows self-approval). Idempotent by the optional request_id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ApproveRebuildResponse> approveRebuild(
        io.github.resultsync.fitness.v1.ApproveRebuildRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getApproveRebuildMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns one rebuild and its state transitions.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.GetRebuildResponse> getRebuild(
        io.github.resultsync.fitness.v1.GetRebuildRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetRebuildMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists rebuilds, newest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ListRebuildsResponse> listRebuilds(
        io.github.resultsync.fitness.v1.ListRebuildsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListRebuildsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Cancels a rebuild before it starts switching readers. Idempotent by the
     * optional request_id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.CancelRebuildResponse> cancelRebuild(
        io.github.resultsync.fitness.v1.CancelRebuildRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCancelRebuildMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_CREATE_REPAIR = 0;
  private static final int METHODID_PLAN_REPAIR = 1;
  private static final int METHODID_APPROVE_REPAIR = 2;
  private static final int METHODID_GET_REPAIR = 3;
  private static final int METHODID_LIST_REPAIRS = 4;
  private static final int METHODID_LIST_REPAIR_ITEMS = 5;
  private static final int METHODID_VERIFY_REPAIR = 6;
  private static final int METHODID_WATCH_REPAIR = 7;
  private static final int METHODID_CANCEL_REPAIR = 8;
  private static final int METHODID_START_REBUILD = 9;
  private static final int METHODID_APPROVE_REBUILD = 10;
  private static final int METHODID_GET_REBUILD = 11;
  private static final int METHODID_LIST_REBUILDS = 12;
  private static final int METHODID_WATCH_REBUILD = 13;
  private static final int METHODID_CANCEL_REBUILD = 14;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_CREATE_REPAIR:
          serviceImpl.createRepair((io.github.resultsync.fitness.v1.CreateRepairRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CreateRepairResponse>) responseObserver);
          break;
        case METHODID_PLAN_REPAIR:
          serviceImpl.planRepair((io.github.resultsync.fitness.v1.PlanRepairRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.PlanRepairResponse>) responseObserver);
          break;
        case METHODID_APPROVE_REPAIR:
          serviceImpl.approveRepair((io.github.resultsync.fitness.v1.ApproveRepairRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ApproveRepairResponse>) responseObserver);
          break;
        case METHODID_GET_REPAIR:
          serviceImpl.getRepair((io.github.resultsync.fitness.v1.GetRepairRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetRepairResponse>) responseObserver);
          break;
        case METHODID_LIST_REPAIRS:
          serviceImpl.listRepairs((io.github.resultsync.fitness.v1.ListRepairsRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListRepairsResponse>) responseObserver);
          break;
        case METHODID_LIST_REPAIR_ITEMS:
          serviceImpl.listRepairItems((io.github.resultsync.fitness.v1.ListRepairItemsRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListRepairItemsResponse>) responseObserver);
          break;
        case METHODID_VERIFY_REPAIR:
          serviceImpl.verifyRepair((io.github.resultsync.fitness.v1.VerifyRepairRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.VerifyRepairResponse>) responseObserver);
          break;
        case METHODID_WATCH_REPAIR:
          serviceImpl.watchRepair((io.github.resultsync.fitness.v1.WatchRepairRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.WatchRepairResponse>) responseObserver);
          break;
        case METHODID_CANCEL_REPAIR:
          serviceImpl.cancelRepair((io.github.resultsync.fitness.v1.CancelRepairRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CancelRepairResponse>) responseObserver);
          break;
        case METHODID_START_REBUILD:
          serviceImpl.startRebuild((io.github.resultsync.fitness.v1.StartRebuildRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.StartRebuildResponse>) responseObserver);
          break;
        case METHODID_APPROVE_REBUILD:
          serviceImpl.approveRebuild((io.github.resultsync.fitness.v1.ApproveRebuildRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ApproveRebuildResponse>) responseObserver);
          break;
        case METHODID_GET_REBUILD:
          serviceImpl.getRebuild((io.github.resultsync.fitness.v1.GetRebuildRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetRebuildResponse>) responseObserver);
          break;
        case METHODID_LIST_REBUILDS:
          serviceImpl.listRebuilds((io.github.resultsync.fitness.v1.ListRebuildsRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListRebuildsResponse>) responseObserver);
          break;
        case METHODID_WATCH_REBUILD:
          serviceImpl.watchRebuild((io.github.resultsync.fitness.v1.WatchRebuildRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.WatchRebuildResponse>) responseObserver);
          break;
        case METHODID_CANCEL_REBUILD:
          serviceImpl.cancelRebuild((io.github.resultsync.fitness.v1.CancelRebuildRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CancelRebuildResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getCreateRepairMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.CreateRepairRequest,
              io.github.resultsync.fitness.v1.CreateRepairResponse>(
                service, METHODID_CREATE_REPAIR)))
        .addMethod(
          getPlanRepairMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.PlanRepairRequest,
              io.github.resultsync.fitness.v1.PlanRepairResponse>(
                service, METHODID_PLAN_REPAIR)))
        .addMethod(
          getApproveRepairMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ApproveRepairRequest,
              io.github.resultsync.fitness.v1.ApproveRepairResponse>(
                service, METHODID_APPROVE_REPAIR)))
        .addMethod(
          getGetRepairMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.GetRepairRequest,
              io.github.resultsync.fitness.v1.GetRepairResponse>(
                service, METHODID_GET_REPAIR)))
        .addMethod(
          getListRepairsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ListRepairsRequest,
              io.github.resultsync.fitness.v1.ListRepairsResponse>(
                service, METHODID_LIST_REPAIRS)))
        .addMethod(
          getListRepairItemsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ListRepairItemsRequest,
              io.github.resultsync.fitness.v1.ListRepairItemsResponse>(
                service, METHODID_LIST_REPAIR_ITEMS)))
        .addMethod(
          getVerifyRepairMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.VerifyRepairRequest,
              io.github.resultsync.fitness.v1.VerifyRepairResponse>(
                service, METHODID_VERIFY_REPAIR)))
        .addMethod(
          getWatchRepairMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.WatchRepairRequest,
              io.github.resultsync.fitness.v1.WatchRepairResponse>(
                service, METHODID_WATCH_REPAIR)))
        .addMethod(
          getCancelRepairMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.CancelRepairRequest,
              io.github.resultsync.fitness.v1.CancelRepairResponse>(
                service, METHODID_CANCEL_REPAIR)))
        .addMethod(
          getStartRebuildMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.StartRebuildRequest,
              io.github.resultsync.fitness.v1.StartRebuildResponse>(
                service, METHODID_START_REBUILD)))
        .addMethod(
          getApproveRebuildMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ApproveRebuildRequest,
              io.github.resultsync.fitness.v1.ApproveRebuildResponse>(
                service, METHODID_APPROVE_REBUILD)))
        .addMethod(
          getGetRebuildMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.GetRebuildRequest,
              io.github.resultsync.fitness.v1.GetRebuildResponse>(
                service, METHODID_GET_REBUILD)))
        .addMethod(
          getListRebuildsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ListRebuildsRequest,
              io.github.resultsync.fitness.v1.ListRebuildsResponse>(
                service, METHODID_LIST_REBUILDS)))
        .addMethod(
          getWatchRebuildMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.WatchRebuildRequest,
              io.github.resultsync.fitness.v1.WatchRebuildResponse>(
                service, METHODID_WATCH_REBUILD)))
        .addMethod(
          getCancelRebuildMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.CancelRebuildRequest,
              io.github.resultsync.fitness.v1.CancelRebuildResponse>(
                service, METHODID_CANCEL_REBUILD)))
        .build();
  }

  private static abstract class RepairServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    RepairServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return io.github.resultsync.fitness.v1.RepairProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("RepairService");
    }
  }

  private static final class RepairServiceFileDescriptorSupplier
      extends RepairServiceBaseDescriptorSupplier {
    RepairServiceFileDescriptorSupplier() {}
  }

  private static final class RepairServiceMethodDescriptorSupplier
      extends RepairServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    RepairServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (RepairServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new RepairServiceFileDescriptorSupplier())
              .addMethod(getCreateRepairMethod())
              .addMethod(getPlanRepairMethod())
              .addMethod(getApproveRepairMethod())
              .addMethod(getGetRepairMethod())
              .addMethod(getListRepairsMethod())
              .addMethod(getListRepairItemsMethod())
              .addMethod(getVerifyRepairMethod())
              .addMethod(getWatchRepairMethod())
              .addMethod(getCancelRepairMethod())
              .addMethod(getStartRebuildMethod())
              .addMethod(getApproveRebuildMethod())
              .addMethod(getGetRebuildMethod())
              .addMethod(getListRebuildsMethod())
              .addMethod(getWatchRebuildMethod())
              .addMethod(getCancelRebuildMethod())
              .build();
        }
      }
    }
    return result;
  }
}
